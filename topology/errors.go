package topology

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors. Validate and ClientOptions return them wrapped in a
// *FieldError that names the cluster and the field; Parse and Load return
// ErrParse and ErrUnknownField wrapped in a *ParseError. Match them with
// errors.Is and read the details with errors.As.
var (
	// ErrNoClusters is returned when a topology has no clusters.
	ErrNoClusters = errors.New("no clusters")

	// ErrMissingField is returned when a required field (name, serviceURL)
	// is empty.
	ErrMissingField = errors.New("missing field")

	// ErrBadName is returned when a cluster name is not valid UTF-8 or
	// contains whitespace, control or other non-printing characters. Names
	// become metric attributes and environment variable prefixes.
	ErrBadName = errors.New("bad name")

	// ErrDuplicateName is returned when two clusters have the same name, or
	// names that map to the same environment variable prefix (see EnvPrefix),
	// such as "east-1" and "east_1".
	ErrDuplicateName = errors.New("duplicate name")

	// ErrDuplicateURL is returned when two clusters share a broker endpoint
	// (host and port) in their serviceURL, or have the same adminURL.
	ErrDuplicateURL = errors.New("duplicate URL")

	// ErrBadURL is returned when a URL cannot be parsed, has the wrong scheme
	// (serviceURL: pulsar:// or pulsar+ssl://; adminURL: http:// or
	// https://), lacks a host, has a bad port, carries user info, or has
	// parts the client ignores (a path, query or fragment on a serviceURL).
	ErrBadURL = errors.New("bad URL")

	// ErrBadWeight is returned when a weight is zero, negative, NaN or
	// infinite.
	ErrBadWeight = errors.New("bad weight")

	// ErrUnreadableFile is returned when a TLS file or token file does not
	// exist, is not a regular file, cannot be read, or is empty. The error
	// names the path, never the contents.
	ErrUnreadableFile = errors.New("unreadable file")

	// ErrBadTLSFile is returned by ClientOptions when it builds the TLS
	// configuration itself (TLS.SkipHostnameChecking without
	// TLS.AllowInsecure) and a TLS file holds no usable PEM data: CAFile
	// has no certificate, or CertFile and KeyFile are not a matching
	// certificate and private key. Validate does not parse TLS files; on
	// other settings pulsar-client-go reads them when it connects. The error
	// names the paths, never the contents.
	ErrBadTLSFile = errors.New("bad TLS file")

	// ErrConflict is returned when settings contradict each other: both
	// auth.token and auth.tokenFile are set, only one of tls.certFile and
	// tls.keyFile is set, or TLS settings are given for a plaintext
	// pulsar:// serviceURL (where the client would silently ignore them).
	ErrConflict = errors.New("conflicting settings")

	// ErrBadSetting is returned when a client setting is out of range
	// (a negative duration or count) or auth.token contains whitespace or
	// control characters.
	ErrBadSetting = errors.New("bad setting")

	// ErrParse is returned when YAML cannot be decoded: a syntax error, a
	// value of the wrong type (such as a duration without a unit), a
	// duplicate key, or more than one YAML document.
	ErrParse = errors.New("invalid YAML")

	// ErrUnknownField is returned when YAML contains a key that is not a
	// field of the type it appears in, usually a typo.
	ErrUnknownField = errors.New("unknown field")
)

// FieldError is one problem with one field of one cluster. Validate joins
// every FieldError it finds with errors.Join.
//
// Its text never contains a token or the contents of a file.
type FieldError struct {
	// Cluster is the cluster's name, or "#i" (its index) when it has none.
	// It is empty for problems with the topology as a whole.
	Cluster string
	// Index is the cluster's position in Topology.Clusters, counting from
	// 0, or -1 when not known (topology-wide problems, and errors from
	// Cluster.ClientOptions).
	Index int
	// Field is the YAML path of the field within the cluster, such as
	// "serviceURL", "tls.caFile" or "client.operationTimeout"; "clusters"
	// for topology-wide problems.
	Field string
	// Reason is a human-readable detail; it may be empty.
	Reason string
	// Err is one of the sentinel errors of this package.
	Err error
}

// Error returns text such as
//
//	topology: cluster "east" (#2): serviceURL: scheme "http" is not pulsar:// or pulsar+ssl://: bad URL
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("topology: ")
	switch {
	case e.Cluster == "" && e.Index < 0:
		// Topology-wide.
	case strings.HasPrefix(e.Cluster, "#"):
		b.WriteString("cluster " + e.Cluster + ": ")
	case e.Cluster == "":
		b.WriteString("unnamed cluster: ")
	default:
		b.WriteString("cluster " + strconv.Quote(e.Cluster))
		if e.Index >= 0 {
			b.WriteString(" (#" + strconv.Itoa(e.Index) + ")")
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Field)
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel error.
func (e *FieldError) Unwrap() error { return e.Err }

// ParseError is one problem decoding topology YAML. Load and Parse join
// every ParseError they find with errors.Join.
//
// Its text never contains a scalar value from the input, so a token placed
// under the wrong key does not leak.
type ParseError struct {
	// Source is the file path given to Load; empty for Parse.
	Source string
	// Line is the 1-based line of the problem, or 0 when not known.
	Line int
	// Field is the offending key when Err is ErrUnknownField.
	Field string
	// Reason is a human-readable detail; it may be empty.
	Reason string
	// Err is ErrParse or ErrUnknownField.
	Err error
}

// Error returns text such as
//
//	topology: clusters.yaml: line 7: "tokn" in auth: unknown field
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("topology: ")
	if e.Source != "" {
		b.WriteString(e.Source + ": ")
	}
	if e.Line > 0 {
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Reason != "" {
		b.WriteString(e.Reason + ": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return strings.TrimSuffix(b.String(), ": ")
}

// Unwrap returns ErrParse or ErrUnknownField.
func (e *ParseError) Unwrap() error { return e.Err }
