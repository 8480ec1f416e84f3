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
// another restarted. It passes when every refusal came within a stall of
// that cluster's acks (or a DownAfter after it), and fails when its acks
// flowed at one of them, or for another error.
func TestCheckErrorsExcusesOnlyAStalledHealthyCluster(t *testing.T) {
	RegisterTestingT(t)
	down := &producer.SendError{Key: "k-00021", Cluster: "local-1", Err: producer.ErrClusterDown}
	start := time.Now()
	stall := ackStall{start.Add(10 * time.Second), start.Add(11200 * time.Millisecond)}
	check := func(err error, at ...time.Duration) []string {
		l := newLoad(nil, rate, 1, time.Second)
		l.start = start
		l.failed["k-00021|50"] = err
		l.errKinds["local-1"] = map[string]int{errClass(err): 1}
		for _, a := range at {
			l.refused["local-1"] = append(l.refused["local-1"], start.Add(a))
		}
		l.stalls["local-1"] = []ackStall{stall}
		return InterceptGomegaFailures(func() { l.checkErrors("local-3") })
	}
	Expect(check(down, 11*time.Second, 12*time.Second)).To(BeEmpty(), "a healthy cluster whose acks stopped may refuse as cluster down")
	Expect(check(down, 30*time.Second)).NotTo(BeEmpty(), "a cluster whose acks flowed must not be marked down")
	Expect(check(down, 9*time.Second)).NotTo(BeEmpty(), "nor before its acks stopped")
	Expect(check(down, 11*time.Second, 30*time.Second)).NotTo(BeEmpty(), "nor again later, while they flowed")
	timeout := &producer.SendError{Key: "k-00021", Cluster: "local-1", Err: producer.ErrSendTimeout}
	Expect(check(timeout)).NotTo(BeEmpty(), "a healthy cluster fails nothing but cluster down")
}
