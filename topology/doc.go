// Package topology describes the set of independent Pulsar clusters that a
// keyroute producer writes to: their names, URLs, routing weights, auth and
// TLS material, and per-cluster client settings.
//
// Data flows topology -> router -> producer: a Topology is loaded (from YAML
// or built in code), validated once, and handed to producer.New, which builds
// a router over the cluster names and weights and one Pulsar client per
// cluster (see Cluster.ClientOptions).
//
// # Loading
//
// Load (a file) and Parse (bytes) decode YAML strictly, then apply
// environment overrides, then Validate:
//
//	clusters:
//	  - name: east-1
//	    serviceURL: pulsar+ssl://broker-1.east:6651,broker-2.east:6651
//	    adminURL: https://admin.east:8443   # optional
//	    weight: 2                            # optional in YAML: default 1
//	    auth:
//	      tokenFile: /run/secrets/east-token # or token: ...; not both
//	    tls:
//	      caFile: /etc/keyroute/east-ca.pem
//	    client:
//	      operationTimeout: 30s
//	      connectionsPerBroker: 2
//
// An unknown key is an error naming the key and its line. A weight key that
// is missing means 1; in code there is no default, and a zero Weight is
// rejected. Durations need a unit ("5s").
//
// # Environment overrides
//
// For each cluster with a name, variables named after the cluster replace
// fields after decoding and before validation. The prefix (EnvPrefix) is
// "KEYROUTE_CLUSTER_", then the name with ASCII letters upper-cased and
// each other rune that is not an ASCII digit replaced by '_', then a final
// '_'. For a cluster named "east-1":
//
//	KEYROUTE_CLUSTER_EAST_1_SERVICE_URL  replaces serviceURL
//	KEYROUTE_CLUSTER_EAST_1_ADMIN_URL    replaces adminURL
//	KEYROUTE_CLUSTER_EAST_1_TOKEN        sets auth.token, clears auth.tokenFile
//	KEYROUTE_CLUSTER_EAST_1_TOKEN_FILE   sets auth.tokenFile, clears auth.token
//
// Unset and empty variables change nothing. Setting both TOKEN and
// TOKEN_FILE is an ErrConflict. Two names with the same prefix ("east-1"
// and "EAST_1") are rejected as ErrDuplicateName, so one variable can never
// silently configure two clusters. Topologies built in code get overrides
// only by calling ApplyEnv.
//
// # Validation
//
// Validate reports every problem at once as *FieldError values naming the
// cluster, the field and a sentinel error (see errors.go). Besides the
// obvious checks it rejects: names with whitespace or non-printing
// characters (names become metric attributes); a serviceURL with user
// info, a path, a query or a fragment (the client would ignore them); two
// clusters sharing a broker host:port or an admin URL; TLS settings on a
// plaintext pulsar:// serviceURL, because pulsar-client-go silently
// ignores them there and the operator presumably meant pulsar+ssl://; and
// TLS and token files that are missing, not regular files, or empty.
//
// # Secrets
//
// Tokens never appear in errors, and Auth redacts its token in every fmt
// verb (also when nested in a Cluster or Topology), in log/slog and in
// JSON. Redacted returns a copy safe to log or write. WriteFile writes
// tokens as they are (mode 0600); prefer tokenFile or the TOKEN variable to
// keep them out of files.
package topology
