//go:build e2e

package faults

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

// TestCheckErrorsExcusesOnlyAStalledHealthyCluster pins checkErrors on a
// case CI met: a healthy cluster's keys refused as cluster down while
// another restarted. It passes when that cluster's acks had stopped for
// half a DownAfter, and fails when they flowed, or for another error.
func TestCheckErrorsExcusesOnlyAStalledHealthyCluster(t *testing.T) {
	RegisterTestingT(t)
	down := &producer.SendError{Key: "k-00021", Cluster: "local-1", Err: producer.ErrClusterDown}
	check := func(gap time.Duration, err error) []string {
		l := newLoad(nil, rate, 1, time.Second)
		l.failed["k-00021|50"] = err
		l.errKinds["local-1"] = map[string]int{errClass(err): 1}
		l.ackGap["local-1"] = gap
		return InterceptGomegaFailures(func() { l.checkErrors("local-3") })
	}
	Expect(check(900*time.Millisecond, down)).To(BeEmpty(), "a healthy cluster whose acks stopped may refuse as cluster down")
	Expect(check(20*time.Millisecond, down)).NotTo(BeEmpty(), "a cluster whose acks flowed must not be marked down")
	timeout := &producer.SendError{Key: "k-00021", Cluster: "local-1", Err: producer.ErrSendTimeout}
	Expect(check(900*time.Millisecond, timeout)).NotTo(BeEmpty(), "a healthy cluster fails nothing but cluster down")
}
