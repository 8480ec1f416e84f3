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
// another restarted. It passes when the first refusal came within a stall
// of that cluster's acks, and fails when its acks flowed then, or for
// another error.
func TestCheckErrorsExcusesOnlyAStalledHealthyCluster(t *testing.T) {
	RegisterTestingT(t)
	down := &producer.SendError{Key: "k-00021", Cluster: "local-1", Err: producer.ErrClusterDown}
	start := time.Now()
	stall := ackStall{start.Add(10 * time.Second), start.Add(11200 * time.Millisecond)}
	check := func(at time.Duration, err error) []string {
		l := newLoad(nil, rate, 1, time.Second)
		l.start = start
		l.failed["k-00021|50"] = err
		l.errKinds["local-1"] = map[string]int{errClass(err): 1}
		l.firstErr["local-1"] = start.Add(at)
		l.stalls["local-1"] = []ackStall{stall}
		return InterceptGomegaFailures(func() { l.checkErrors("local-3") })
	}
	Expect(check(11*time.Second, down)).To(BeEmpty(), "a healthy cluster whose acks stopped may refuse as cluster down")
	Expect(check(30*time.Second, down)).NotTo(BeEmpty(), "a cluster whose acks flowed must not be marked down")
	Expect(check(9*time.Second, down)).NotTo(BeEmpty(), "nor before its acks stopped")
	timeout := &producer.SendError{Key: "k-00021", Cluster: "local-1", Err: producer.ErrSendTimeout}
	Expect(check(11*time.Second, timeout)).NotTo(BeEmpty(), "a healthy cluster fails nothing but cluster down")
}
