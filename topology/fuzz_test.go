package topology_test

import (
	"errors"
	"os"
	"testing"

	"github.com/keyroute/keyroute/topology"
)

// FuzzParse checks that Parse never panics and never returns a topology
// that Validate rejects. Run with: go test -fuzz=FuzzParse ./topology/
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/valid.yaml", "testdata/invalid.yaml", "testdata/unknown_field.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"",
		"clusters: []",
		"clusters:\n- name: a\n  serviceURL: pulsar://a\n",
		"clusters:\n- name: a\n  serviceURL: pulsar://[::1]:6650,b;c:1\n  weight: 1e-300\n",
		"clusters:\n- &x {name: a, serviceURL: 'pulsar://a'}\n- *x\n",
		"clusters:\n- name: a\n  serviceURL: pulsar+ssl://a\n  tls: {caFile: /dev/stdin}\n",
		"clusters:\n- name: a\n  adminURL: https://[::1]:8443/x\n  client: {operationTimeout: 1h}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		topo, err := topology.Parse(data)
		if err != nil {
			if topo != nil {
				t.Fatalf("Parse returned a topology with error %v", err)
			}
			return
		}
		if err := topo.Validate(); err != nil {
			t.Fatalf("Parse accepted a topology that Validate rejects: %v", err)
		}
		if err := topo.Redacted().Validate(); err != nil {
			t.Fatalf("Redacted copy is invalid: %v", err)
		}
		for _, c := range topo.Clusters {
			// ClientOptions parses TLS files (Validate does not) when it
			// builds the TLS configuration for skipHostnameChecking.
			if _, err := c.ClientOptions(); err != nil && !errors.Is(err, topology.ErrBadTLSFile) {
				t.Fatalf("ClientOptions failed on a valid cluster: %v", err)
			}
		}
	})
}
