package topology_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

// secret is the token used throughout the tests; no output may contain it.
const secret = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRlc3QtdG9rZW4.S3CR3Tsig"

// files holds paths of readable files in a per-test directory.
type files struct {
	dir, ca, cert, key, token string
}

func newFiles(t *testing.T) files {
	t.Helper()
	dir := t.TempDir()
	f := files{
		dir:   dir,
		ca:    filepath.Join(dir, "ca.pem"),
		cert:  filepath.Join(dir, "client.pem"),
		key:   filepath.Join(dir, "client-key.pem"),
		token: filepath.Join(dir, "token"),
	}
	for _, p := range []string{f.ca, f.cert, f.key} {
		require.NoError(t, os.WriteFile(p, []byte("placeholder\n"), 0o600))
	}
	require.NoError(t, os.WriteFile(f.token, []byte(secret+"\n"), 0o600))
	return f
}

// validTopology returns a topology that passes Validate: a TLS cluster with
// a token and client certificate, and a plaintext cluster with a token file.
func validTopology(t *testing.T) (*topology.Topology, files) {
	t.Helper()
	f := newFiles(t)
	return &topology.Topology{Clusters: []topology.Cluster{
		{
			Name:       "east-1",
			ServiceURL: "pulsar+ssl://b1.east.example:6651,b2.east.example:6651",
			AdminURL:   "https://admin.east.example:8443",
			Weight:     2,
			Auth:       topology.Auth{Token: secret},
			TLS:        topology.TLS{CAFile: f.ca, CertFile: f.cert, KeyFile: f.key},
		},
		{
			Name:       "west-1",
			ServiceURL: "pulsar://b.west.example:6650",
			AdminURL:   "http://admin.west.example:8080",
			Weight:     1,
			Auth:       topology.Auth{TokenFile: f.token},
		},
	}}, f
}

// fieldErrors flattens err (an errors.Join tree) into its *FieldErrors and
// fails if it holds anything else.
func fieldErrors(t *testing.T, err error) []*topology.FieldError {
	t.Helper()
	var out []*topology.FieldError
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var fe *topology.FieldError
		require.True(t, errors.As(e, &fe), "not a *FieldError: %v", e)
		out = append(out, fe)
	}
	if err != nil {
		walk(err)
	}
	return out
}
