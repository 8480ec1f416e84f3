//go:build e2e

package keyroutecmd

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/program"
	"github.com/keyroute/keyroute/internal/testbed"
)

func TestKeyrouteCmd(t *testing.T) { bedsuite.Run(t, "keyroute command Suite") }

// bedUnderTest is one started bed and the topology file it wrote.
type bedUnderTest struct {
	suite    *bedsuite.Suite
	topology string
	names    []string
}

var (
	binary string // the built keyroute command
	tmpDir string
	plain  bedUnderTest
	secure bedUnderTest
)

var _ = BeforeSuite(func() {
	tmpDir = GinkgoT().TempDir()
	binary = program.Build("./cmd/keyroute", tmpDir)
	plain = startBed(testbed.Options{Clusters: 2, NamePrefix: "plain-"}, "plain.yaml")
	secure = startBed(testbed.Options{Clusters: 2, NamePrefix: "secure-", Secure: true}, "secure.yaml")
})

func startBed(o testbed.Options, file string) bedUnderTest {
	s := bedsuite.Start(o)
	path := filepath.Join(tmpDir, file)
	Expect(s.Bed.WriteTopology(path)).To(Succeed())
	return bedUnderTest{suite: s, topology: path, names: s.Bed.Topology().Names()}
}
