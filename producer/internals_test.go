package producer

import (
	"os"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// The points of internals.go were checked in one pulsar-client-go
// version's source; another version must be read again before it is used.
// (A test binary's build info lists no dependencies, so the version is
// read from the module's go.mod, which pins it exactly.)
func TestPulsarClientGoIsTheVersionInternalsWereCheckedAgainst(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "require" {
			f = f[1:]
		}
		if len(f) < 2 || f[0] != "github.com/apache/pulsar-client-go" {
			continue
		}
		if f[1] != pulsarClientGo {
			t.Fatalf("go.mod requires pulsar-client-go %s, internals.go was checked against %s: "+
				"read each point of internals.go in the new source, then update pulsarClientGo", f[1], pulsarClientGo)
		}
		return
	}
	t.Fatal("go.mod does not require pulsar-client-go")
}

// notSent is the list of errors after which a message certainly never
// left the client; a send timeout is not among them.
func TestNotSentClassifiesPulsarErrors(t *testing.T) {
	for _, err := range notSentErrs {
		if !notSent(err) {
			t.Errorf("notSent(%v) = false", err)
		}
	}
	for _, err := range []error{pulsar.ErrSendTimeout, pulsar.ErrProducerClosed, ErrClosed} {
		if notSent(err) {
			t.Errorf("notSent(%v) = true: such a message may have been written", err)
		}
	}
}
