//go:build e2e

package degraded

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
)

func TestDegraded(t *testing.T) { bedsuite.Run(t, "Degraded Start Suite") }

var suite *bedsuite.Suite

var _ = BeforeSuite(func() {
	suite = bedsuite.Start(testbed.Options{Clusters: 5})
})
