//go:build e2e

package changefaults

import (
	"context"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/consume"
	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// updateBound bounds one Clients.Update: the added clients and the
// consumers' subscriptions each wait up to StartTimeout, the producers
// wait for the previous hand-overs and their added writers (a Send's
// bound covers both), the consumers drain a removed cluster up to
// DrainTimeout; doubled for slack.
const updateBound = 2 * (3*startTimeout + sendBound + drainTimeout)

// closeBound bounds Clients.Close and a producer's or consumer's Close:
// a flush of messages that end within a Send's bound.
const closeBound = 2 * sendBound

// clientsCase is a keyroute.Clients on a topology with a consumer and a
// producer on one topic (read) and a producer on another (write), and a
// reader of the consumer.
type clientsCase struct {
	cs            *keyroute.Clients
	cons          *consumer.Consumer
	pRead, pWrite *producer.Producer
	rd            *reader
	lRead, lWrite *ordercheck.Ledger
}

func newClientsCase(ctx context.Context, topo *topology.Topology, readTopic, writeTopic, sub string) *clientsCase {
	GinkgoHelper()
	cs, err := keyroute.NewClients(topo)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		took, err := within(ctx, closeBound, cs.Close)
		GinkgoWriter.Printf("Clients.Close took %s\n", took.Round(time.Millisecond))
		Expect(err).NotTo(HaveOccurred())
	})
	k := &clientsCase{cs: cs, lRead: ordercheck.NewLedger(), lWrite: ordercheck.NewLedger()}
	k.cons = openConsumer(ctx, topo, readTopic, sub, consumer.WithClients(cs))
	k.pRead = openProducer(ctx, topo, readTopic, producer.WithClients(cs))
	k.pWrite = openProducer(ctx, topo, writeTopic, producer.WithClients(cs))
	k.rd = startReader(ctx, k.cons)
	return k
}

// update runs Clients.Update within updateBound and prints what it took.
func (k *clientsCase) update(ctx context.Context, what string, topo *topology.Topology) error {
	GinkgoHelper()
	took, err := within(ctx, updateBound, func(ctx context.Context) error { return k.cs.Update(ctx, topo) })
	GinkgoWriter.Printf("%s Clients.Update took %s: %v\n", what, took.Round(time.Millisecond), err)
	return err
}

// readPlain reads topic back from clusters with plain consumers (a
// subscription of its own) until want messages came and then nothing for
// a while, and returns their payloads; hand-over markers (no payload)
// are left out.
func readPlain(ctx context.Context, topic string, want int, names ...string) []string {
	GinkgoHelper()
	var cl []*testbed.Cluster
	for _, n := range names {
		cl = append(cl, bed.Cluster(n))
	}
	rctx, cancel := context.WithTimeout(ctx, sendBound)
	defer cancel()
	got, err := consume.Until(rctx, cl, topic, "verify", func(got []consume.Received) bool {
		n := 0
		for _, g := range got {
			if g.Payload != "" {
				n++
			}
		}
		return n >= want
	}, 2*time.Second)
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, g := range got {
		if g.Payload != "" {
			out = append(out, g.Payload)
		}
	}
	GinkgoWriter.Printf("%s: read %d messages and %d markers\n", topic, len(out), len(got)-len(out))
	return out
}

var _ = Describe("Clients.Update with a user that fails", func() {
	It("stops at step 1 when a consumer cannot take the added cluster: undone, no producer moved, nothing written there, and everything keeps working", func(sctx SpecContext) {
		ctx := specCtx(sctx, 4*updateBound)
		a, b, c := clusters()
		readTopic := newTopic(ctx, "step1-read", a, b)      // missing on c
		writeTopic := newTopic(ctx, "step1-write", a, b, c) // made everywhere
		oldTopo, newTopo := topoOf(a.Name, b.Name), topoOf(a.Name, b.Name, c.Name)
		k := newClientsCase(ctx, oldTopo, readTopic, writeTopic, "step1")
		cons, pRead, pWrite, rd, lRead, lWrite := k.cons, k.pRead, k.pWrite, k.rd, k.lRead, k.lWrite
		keys := keysN("k", 100)
		send := func(round string) {
			for _, k := range keys {
				Expect(sendTracked(ctx, pRead, lRead, "read"+round, k)).To(Succeed())
				Expect(sendTracked(ctx, pWrite, lWrite, "write"+round, k)).To(Succeed())
			}
		}
		send("before")

		By("updating to a topology that adds a cluster where the consumer's topic is missing")
		err := k.update(ctx, "the", newTopo)
		var ue *keyroute.UpdateError
		Expect(errors.As(err, &ue)).To(BeTrue(), "an *UpdateError, got %v", err)
		Expect(ue.Step).To(Equal(1))
		Expect(ue.Undone).To(BeTrue())
		Expect(ue.Failed).To(ConsistOf(ContainSubstring(fmt.Sprintf("%q", readTopic))))
		Expect(ue.Failed[0]).To(HavePrefix("consumer"))
		Expect(ue.Errs).To(HaveLen(1))
		Expect(ue.Errs[0].Error()).To(ContainSubstring(c.Name), "the consumer's error names the cluster that refused")
		Expect(ue.Moved).To(BeEmpty())

		Expect(pRead.Epoch()).To(BeZero(), "no producer moved")
		Expect(pWrite.Epoch()).To(BeZero(), "no producer moved")
		Expect(k.cs.Check(oldTopo)).To(Succeed(), "the Clients are on the old topology")
		Expect(clusterNames(cons.Health(ctx))).To(Equal([]string{a.Name, b.Name}), "the consumer is back on the old topology")
		_, err = k.cs.Client(c.Name)
		Expect(err).To(MatchError(keyroute.ErrUnknownCluster))

		By("sending again: everything keeps working, and nothing reached the added cluster")
		send("after")
		n, err := admin.EntriesAdded(ctx, c.AdminURL, writeTopic)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeZero(), "entries written to %s's topic on the added cluster", writeTopic)

		got := rd.waitAll(lRead, sendBound)
		checkRead(ctx, "consumer", lRead, got, cons)
		checkPlain("write topic", lWrite, readPlain(ctx, writeTopic, acked(lWrite), a.Name, b.Name, c.Name))
		Expect(acked(lRead)).To(Equal(2 * len(keys)))
		Expect(acked(lWrite)).To(Equal(2 * len(keys)))
	})

	It("stops at step 2 when a producer cannot move: the removed cluster is still read, and a second Update after the fix finishes the change; nothing lost", func(sctx SpecContext) {
		ctx := specCtx(sctx, 4*updateBound)
		a, b, c := clusters()
		readTopic := newTopic(ctx, "step2-read", a, b, c) // made everywhere
		writeTopic := newTopic(ctx, "step2-write", a, b)  // missing on c until fixed
		oldTopo, newTopo := topoOf(a.Name, b.Name), topoOf(a.Name, c.Name)
		k := newClientsCase(ctx, oldTopo, readTopic, writeTopic, "step2")
		cons, pRead, pWrite, rd, lRead, lWrite := k.cons, k.pRead, k.pWrite, k.rd, k.lRead, k.lWrite
		keys := keysN("k", 100)
		moved := 0
		before, after := owners(oldTopo, keys), owners(newTopo, keys)
		for _, k := range keys {
			if before[k] != after[k] {
				moved++
			}
		}
		GinkgoWriter.Printf("keys %d, moved by the change %d\n", len(keys), moved)
		Expect(moved).To(BeNumerically(">", 0))
		sRead := startAsync(ctx, pRead, lRead, "read", keys, 10*time.Millisecond)
		sWrite := startAsync(ctx, pWrite, lWrite, "write", keys, 10*time.Millisecond)
		// Every key has messages before the change.
		Eventually(sRead.count).WithTimeout(sendBound).Should(BeNumerically(">=", len(keys)))
		Eventually(sWrite.count).WithTimeout(sendBound).Should(BeNumerically(">=", len(keys)))

		By("updating to a topology that adds a cluster where one producer's topic is missing and removes another")
		err := k.update(ctx, "first", newTopo)
		var ue *keyroute.UpdateError
		Expect(errors.As(err, &ue)).To(BeTrue(), "an *UpdateError, got %v", err)
		Expect(ue.Step).To(Equal(2))
		Expect(ue.Failed).To(ConsistOf(ContainSubstring(fmt.Sprintf("%q", writeTopic))))
		Expect(ue.Moved).To(ConsistOf(ContainSubstring(fmt.Sprintf("%q", readTopic))))
		Expect(ue.StillRead).To(Equal([]string{b.Name}))
		Expect(errors.Is(err, producer.ErrConnect)).To(BeTrue(), "the producer's error matches ErrConnect: %v", err)
		Expect(pRead.Epoch()).To(Equal(uint64(1)), "the producer that could move moved")
		Expect(pWrite.Epoch()).To(BeZero(), "the producer that could not move is on the old topology")
		Expect(clusterNames(cons.Health(ctx))).To(ContainElement(b.Name), "the removed cluster is still read")

		// Both producers keep sending meanwhile: the one left behind still
		// writes to the removed cluster.
		n0 := sWrite.count()
		Eventually(sWrite.count).WithTimeout(sendBound).Should(BeNumerically(">=", n0+len(keys)))

		By("making the missing topic and updating again")
		bedsuite.CreateTopic(ctx, []*testbed.Cluster{c}, writeTopic, partitions)
		err = k.update(ctx, "second", newTopo)
		Expect(err).NotTo(HaveOccurred())
		Expect(pWrite.Epoch()).To(Equal(uint64(1)))
		Expect(k.cs.Check(newTopo)).To(Succeed())
		_, err = k.cs.Client(b.Name)
		Expect(err).To(MatchError(keyroute.ErrUnknownCluster))
		Eventually(func() []string { return clusterNames(cons.Health(ctx)) }).WithTimeout(2*drainTimeout).
			Should(Equal([]string{a.Name, c.Name}), "the removed cluster is dropped once drained")

		n0 = sWrite.count()
		Eventually(sWrite.count).WithTimeout(sendBound).Should(BeNumerically(">=", n0+len(keys)))
		for _, sd := range []*asyncSender{sRead, sWrite} {
			sd.end(sendBound)
			Expect(sd.failed).To(BeZero(), "%v", sd.byErr)
		}
		if ch, ok := pRead.LastChange(); ok {
			GinkgoWriter.Printf("moving producer's change: %+v\n", ch)
		}
		if ch, ok := pWrite.LastChange(); ok {
			GinkgoWriter.Printf("late producer's change: %+v\n", ch)
		}

		got := rd.waitAll(lRead, sendBound)
		checkRead(ctx, "consumer", lRead, got, cons)
		checkPlain("write topic", lWrite, readPlain(ctx, writeTopic, acked(lWrite), a.Name, b.Name, c.Name))
	})
})
