package topology

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
)

// RedactedToken is the value that stands in for a token in Redacted, String,
// GoString, Format, LogValue and MarshalJSON output.
const RedactedToken = "REDACTED"

// Redacted returns a deep copy of t with every non-empty Auth.Token replaced
// by "REDACTED", safe to log or write with WriteFile. Token file paths are
// kept: they are not secrets. A nil t gives nil.
func (t *Topology) Redacted() *Topology {
	if t == nil {
		return nil
	}
	r := &Topology{Clusters: append([]Cluster(nil), t.Clusters...)}
	for i := range r.Clusters {
		r.Clusters[i].Auth = r.Clusters[i].Auth.redacted()
	}
	return r
}

func (a Auth) redacted() Auth {
	if a.Token != "" {
		a.Token = RedactedToken
	}
	return a
}

// String returns a in the shape of %+v with the token redacted, such as
// "{Token:REDACTED TokenFile:}".
func (a Auth) String() string {
	r := a.redacted()
	return "{Token:" + r.Token + " TokenFile:" + r.TokenFile + "}"
}

// GoString returns a in the shape of %#v with the token redacted.
func (a Auth) GoString() string {
	r := a.redacted()
	return "topology.Auth{Token:" + strconv.Quote(r.Token) + ", TokenFile:" + strconv.Quote(r.TokenFile) + "}"
}

// Format implements fmt.Formatter so that no verb or flag, including %x
// and %d, prints the token, even when Auth is nested in a Cluster or a
// Topology: %#v prints GoString, %q a quoted String, and every other verb
// String.
func (a Auth) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, a.GoString())
	case verb == 'q':
		io.WriteString(f, strconv.Quote(a.String()))
	default:
		io.WriteString(f, a.String())
	}
}

// LogValue implements slog.LogValuer with the token redacted.
func (a Auth) LogValue() slog.Value {
	r := a.redacted()
	return slog.GroupValue(slog.String("token", r.Token), slog.String("tokenFile", r.TokenFile))
}

// MarshalJSON encodes a with the token redacted, for loggers that encode
// values as JSON (such as zap.Any on a Cluster). Topologies are stored as
// YAML, which is not redacted; JSON is for display only.
func (a Auth) MarshalJSON() ([]byte, error) {
	r := a.redacted()
	return json.Marshal(struct {
		Token     string `json:"token,omitempty"`
		TokenFile string `json:"tokenFile,omitempty"`
	}{r.Token, r.TokenFile})
}
