//go:build e2e

package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/standalone"
	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
)

const (
	rate        = 4000 // messages per second offered, over all clusters
	downAfter   = time.Second
	sendTimeout = 10 * time.Second
	// tick is the producer's health monitor period (DownAfter/8, see
	// producer/health.go): the state flips only at a tick.
	tick = downAfter / 8
	// poll is how often the specs read Health.
	poll   = tick / 2
	before = 6 * time.Second // healthy load before the fault
	during = 8 * time.Second // load while the cluster is broken
	after  = 6 * time.Second // load after it is back
)

// newTopic creates a partitioned topic on every cluster and its "verify"
// subscription. The subscription must exist before anything is written:
// with deduplication on and retention 0 (the defaults), a broker that
// restarts rolls the topic to a new ledger and trims the old one as soon as
// no subscription holds it, so acknowledged messages written before the
// restart would be deleted by Pulsar itself (the dedup cursor does not hold
// them).
func newTopic(ctx context.Context, name string) string {
	topic := fmt.Sprintf("persistent://public/default/%s-%d", name, time.Now().UnixNano())
	for _, c := range bed.Clusters() {
		Expect(admin.CreatePartitionedTopic(ctx, c.AdminURL, topic, 3)).To(Succeed())
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, Logger: plog.DefaultNopLogger()})
		Expect(err).NotTo(HaveOccurred())
		err = standalone.Retry(ctx, func() error {
			cons, err := client.Subscribe(pulsar.ConsumerOptions{
				Topic: topic, SubscriptionName: "verify", Type: pulsar.Exclusive,
				SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
			})
			if err == nil {
				cons.Close()
			}
			return err
		})
		Expect(err).NotTo(HaveOccurred(), c.Name)
		client.Close()
	}
	return topic
}

// fault is one way to break a cluster and mend it again.
type fault struct {
	name  string
	brk   func(*testbed.Cluster) error
	mend  func(*testbed.Cluster, context.Context) error
	fails bool // new messages for it fail (rather than all being delivered late)
}

var faults = []fault{
	{"SIGKILL then restart", (*testbed.Cluster).Kill, (*testbed.Cluster).Restart, true},
	{"SIGSTOP then SIGCONT", (*testbed.Cluster).Pause, func(c *testbed.Cluster, _ context.Context) error { return c.Resume() }, true},
	{"graceful restart", (*testbed.Cluster).Stop, (*testbed.Cluster).Restart, true},
}

// The container is Ordered and the specs that only pause a cluster run
// first, before any cluster has been killed: a standalone killed and
// restarted here fails to create ledgers several times a minute for minutes
// afterwards (see package e2e/internal/standalone), and the one-shot calls
// of later specs retry. The recovery after a kill runs last.
var _ = Describe("one cluster broken under steady load", Ordered, func() {
	overloadSpec()
	outcomeUnknownSpec()
	recoverySpec(recovery{name: "recovery, Spill, keyed traffic: a cluster SIGSTOPped for longer than the send timeout is seen up again after SIGCONT, and its keys are written there again",
		victim: 1, policy: producer.Spill, keyed: true})
	recoverySpec(recovery{name: "recovery, FailFast, keyless traffic only: a cluster SIGSTOPped for longer than the send timeout is seen up again after SIGCONT, and written to again",
		victim: 2, policy: producer.FailFast})
	for i, f := range faults {
		It(f.name+": the others keep their throughput and every acknowledged message arrives once, in order", func(sctx SpecContext) {
			ctx, cancel := context.WithTimeout(sctx, 5*time.Minute)
			defer cancel()
			victim := bed.Clusters()[i%len(bed.Clusters())]
			topic := newTopic(ctx, "faults")
			var p *producer.Producer
			err := standalone.Retry(ctx, func() (err error) {
				p, err = producer.New(ctx, bed.Topology(), producer.Topic(topic),
					producer.DownAfter(downAfter), producer.SendTimeout(sendTimeout))
				return err
			})
			Expect(err).NotTo(HaveOccurred())

			l := newLoad(p, rate, 2000, sendTimeoutSweep(sendTimeout))
			lctx, stopLoad := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); l.run(lctx) }()

			time.Sleep(before)
			brokeAt := time.Since(l.start)
			t0 := time.Now()
			Expect(f.brk(victim)).To(Succeed())
			broken := time.Since(t0) // a graceful stop takes seconds, and acks may come until it ends
			// The last ack comes by the end of brk and is seen at the next
			// tick; the flip comes at the first tick DownAfter after that;
			// one tick more for a monitor that runs late on a busy machine,
			// and one poll.
			detectBound := broken + downAfter + 3*tick + poll
			Eventually(func() bool { return !health(p, victim.Name).Up }).WithTimeout(detectBound).
				WithPolling(poll).Should(BeTrue(), "down within %s (broken in %s)", detectBound, broken)
			detect := time.Since(t0)
			time.Sleep(during - detect)
			mendAt := time.Since(l.start)
			t1 := time.Now()
			Expect(f.mend(victim, ctx)).To(Succeed())
			mended := time.Since(t1)
			Eventually(func() bool { return health(p, victim.Name).Up }).WithTimeout(60 * time.Second).
				WithPolling(poll).Should(BeTrue())
			recovered := time.Since(t1)
			time.Sleep(after)
			stopLoad()
			<-done
			Expect(p.Close(ctx)).To(Succeed())

			GinkgoWriter.Printf("%s on %s: detected down after %s; cluster back in %s, producer saw it up %s after the mend began\n",
				f.name, victim.Name, detect.Round(time.Millisecond), mended.Round(time.Millisecond), recovered.Round(time.Millisecond))
			Expect(detect).To(BeNumerically("<=", detectBound))
			for _, q := range []struct {
				name     string
				ofVictim bool
				from, to time.Duration
			}{
				{"healthy clusters, before", false, time.Second, brokeAt},
				{"healthy clusters, during", false, brokeAt, mendAt},
				{"healthy clusters, after", false, mendAt, mendAt + recovered + after},
				{victim.Name + ", during", true, brokeAt, mendAt},
			} {
				p50, n := l.handOverQuantile(victim.Name, q.ofVictim, q.from, q.to, 0.5)
				p99, _ := l.handOverQuantile(victim.Name, q.ofVictim, q.from, q.to, 0.99)
				p999, _ := l.handOverQuantile(victim.Name, q.ofVictim, q.from, q.to, 0.999)
				top, _ := l.handOverQuantile(victim.Name, q.ofVictim, q.from, q.to, 1)
				GinkgoWriter.Printf("  hand-over %-28s n=%6d p50 %9s p99 %9s p99.9 %9s max %9s\n", q.name, n, p50, p99, p999, top)
			}
			// No hand-over waits for the broken cluster, neither its own
			// messages' (refused at once, or accepted within its share)
			// nor the others': while it is broken their p99 stays within
			// ten times the healthy phase's. (A single slow hand-over
			// proves nothing on two shared cores: the slowest of 55,781
			// took 44 ms here while the victim's JVM restarted; a
			// hand-over that waited would wait for an ack or a send
			// timeout, and so would most of them.)
			healthy, _ := l.handOverQuantile(victim.Name, false, time.Second, brokeAt, 0.99)
			for _, ofVictim := range []bool{false, true} {
				p99, _ := l.handOverQuantile(victim.Name, ofVictim, brokeAt, mendAt, 0.99)
				Expect(p99).To(BeNumerically("<=", 10*healthy), "hand-over p99 while %s was broken (its own messages: %v), against %s before", victim.Name, ofVictim, healthy)
			}
			for _, c := range bed.Clusters() {
				if c == victim {
					continue
				}
				pre := l.rateOf(c.Name, time.Second, brokeAt)
				mid := l.rateOf(c.Name, brokeAt, mendAt)
				keptPre, keptMid := l.keptUp(c.Name, time.Second, brokeAt), l.keptUp(c.Name, brokeAt, mendAt)
				GinkgoWriter.Printf("  %s: %.0f msg/s before, %.0f during (%.0f%%); acked/offered %.3f before, %.3f during\n",
					c.Name, pre, mid, 100*mid/pre, keptPre, keptMid)
				Expect(keptMid).To(BeNumerically(">=", 0.9*keptPre), "%s lost throughput while %s was broken", c.Name, victim.Name)
			}
			back := l.rateOf(victim.Name, mendAt+recovered+time.Second, mendAt+recovered+after-time.Second)
			GinkgoWriter.Printf("  %s: %.0f msg/s after recovery; errors %v\n", victim.Name, back, l.errKinds[victim.Name])
			Expect(back).To(BeNumerically(">", 0), "the mended cluster is used again")
			if f.fails {
				refused := l.refused[victim.Name]
				Expect(refused).NotTo(BeEmpty(), "messages for the broken cluster fail fast")
				GinkgoWriter.Printf("  first ErrClusterDown %s after the fault\n", refused[0].Sub(t0).Round(time.Millisecond))
			}
			l.checkErrors(victim.Name)
			verify(ctx, l, topic)
		})
	}
	recoverySpec(recovery{name: "recovery, Spill, keyed traffic: a cluster SIGKILLed for longer than the send timeout is seen up again after its restart, and its keys are written there again",
		victim: 3, policy: producer.Spill, keyed: true, kill: true, opTimeout: recoverySendTimeout})
})

func health(p *producer.Producer, name string) producer.ClusterHealth {
	for _, h := range p.Health() {
		if h.Name == name {
			return h
		}
	}
	Fail("no cluster " + name)
	return producer.ClusterHealth{}
}
