package testbed

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// brokerConfig returns the settings a test-bed cluster overrides in the
// distribution's conf/standalone.conf. With sec the cluster is secure (see
// secureConfig). extra is applied last and wins.
func brokerConfig(name string, brokerPort, webPort int, sec *secrets, extra map[string]string) map[string]string {
	kv := map[string]string{
		"clusterName":        name,
		"brokerServicePort":  strconv.Itoa(brokerPort),
		"webServicePort":     strconv.Itoa(webPort),
		"bindAddress":        "127.0.0.1",
		"advertisedAddress":  "127.0.0.1",
		"listeningInterface": "lo", // else the bookie binds 0.0.0.0
		// Counter-intuitively, the standalone's bookie uses the
		// --bookkeeper-port it is given only when this is true; otherwise it
		// picks a random port, so its id changes on every restart.
		"allowEphemeralPorts": "true",
		// One bookie: defaults of 2/2/2 make ledger creation fail.
		"managedLedgerDefaultEnsembleSize": "1",
		"managedLedgerDefaultWriteQuorum":  "1",
		"managedLedgerDefaultAckQuorum":    "1",
		// Transactions for the producer's transactional mode.
		"transactionCoordinatorEnabled":             "true",
		"transactionBufferSegmentedSnapshotEnabled": "true",
		// Flush the bookie journal as soon as its queue drains instead of
		// waiting up to journalMaxGroupWaitMSec: ~4x lower send latency.
		"journalFlushWhenQueueEmpty": "true",
		// Not needed by the project; saves threads and startup time.
		"webSocketServiceEnabled": "false",
		"functionsWorkerEnabled":  "false",
	}
	if sec != nil {
		maps.Copy(kv, secureConfig(sec, brokerPort, webPort))
	}
	maps.Copy(kv, extra)
	return kv
}

// Class names of the token authentication provider (broker side) and
// plugin (the broker's own clients).
const (
	tokenProvider = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
	tokenPlugin   = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
)

// secureConfig returns the settings of a secure cluster: TLS only (the
// plain ports are disabled, so the binary protocol and the admin API
// listen on brokerPort and webPort with TLS), client certificates
// required, and token authentication required on both. Authorization stays
// off: every authenticated role may produce and consume.
//
// The broker's own clients (namespace setup, lookups, the transaction
// coordinator, system topics) go through the TLS ports too, so they trust
// the CA, present the client certificate and authenticate as AdminRole
// with a token they read from a file: the token itself is never written to
// the config or the log.
func secureConfig(sec *secrets, brokerPort, webPort int) map[string]string {
	return map[string]string{
		// Empty disables the plain-text listeners.
		"brokerServicePort":    "",
		"webServicePort":       "",
		"brokerServicePortTls": strconv.Itoa(brokerPort),
		"webServicePortTls":    strconv.Itoa(webPort),

		"tlsCertificateFilePath":               sec.brokerCertFile,
		"tlsKeyFilePath":                       sec.brokerKeyFile,
		"tlsTrustCertsFilePath":                sec.caFile,
		"tlsAllowInsecureConnection":           "false",
		"tlsRequireTrustedClientCertOnConnect": "true",

		"authenticationEnabled":   "true",
		"authenticationProviders": tokenProvider,
		"tokenSecretKey":          "file://" + sec.keyFile,
		"superUserRoles":          AdminRole,
		"authorizationEnabled":    "false",

		"brokerClientTlsEnabled":               "true",
		"brokerClientTrustCertsFilePath":       sec.caFile,
		"brokerClientCertificateFilePath":      sec.clientCertFile,
		"brokerClientKeyFilePath":              sec.clientKeyFile,
		"brokerClientAuthenticationPlugin":     tokenPlugin,
		"brokerClientAuthenticationParameters": "file://" + sec.adminTokenFile,
	}
}

// renderConfig rewrites a Java properties file: every "key=value" line
// whose key is in kv gets the new value in place, and keys the base does
// not mention are appended in sorted order. Comments and other lines are
// kept as they are.
func renderConfig(base []byte, kv map[string]string) []byte {
	var out bytes.Buffer
	seen := make(map[string]bool, len(kv))
	sc := bufio.NewScanner(bytes.NewReader(base))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if key, ok := propertyKey(line); ok {
			if v, ok := kv[key]; ok {
				if !seen[key] {
					fmt.Fprintf(&out, "%s=%s\n", key, v)
					seen[key] = true
				}
				continue // drop duplicates of an overridden key
			}
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	var rest []string
	for k := range kv {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		out.WriteString("\n### keyroute testbed overrides\n")
		slices.Sort(rest)
		for _, k := range rest {
			fmt.Fprintf(&out, "%s=%s\n", k, kv[k])
		}
	}
	return out.Bytes()
}

// propertyKey returns the key of a "key=value" properties line.
func propertyKey(line string) (string, bool) {
	s := strings.TrimSpace(line)
	if s == "" || s[0] == '#' || s[0] == '!' {
		return "", false
	}
	i := strings.IndexAny(s, "=:")
	if i <= 0 {
		return "", false
	}
	return strings.TrimSpace(s[:i]), true
}
