//go:build e2e

package parity

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// receiveAll takes messages from c (acknowledging them) until every key
// of want has come, and returns how many came more than once (a
// resubscription's redeliveries). A key not in want fails the spec.
func receiveAll(ctx context.Context, c *consumer.Consumer, want []string) (dups int) {
	GinkgoHelper()
	left := make(map[string]bool, len(want))
	for _, k := range want {
		left[k] = true
	}
	seen := map[string]bool{}
	for len(left) > 0 {
		m, err := c.Receive(ctx)
		Expect(err).NotTo(HaveOccurred(), "%d keys still missing, e.g. %v", len(left), firstKey(left))
		Expect(c.Ack(ctx, m)).To(Succeed())
		if seen[m.Key] {
			dups++
			continue
		}
		Expect(left).To(HaveKey(m.Key), "a key that was not sent in this step")
		seen[m.Key] = true
		delete(left, m.Key)
	}
	return dups
}

func firstKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}

var _ = Describe("keyroute.Clients.Update with settings that change", func() {
	It("reconnects a cluster whose client settings or service URL change, keeps the client when only producer settings change, and the attached producer and consumer keep working through each", func(sctx SpecContext) {
		ctx := specCtx(sctx, 4*time.Minute)
		const n = 60
		topic := newTopic(ctx, "", "clients-update")
		topo := bed.Topology()
		cs, err := keyroute.NewClients(topo)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cs.Close)
		p, err := producer.New(ctx, topo, producer.Topic(topic), producer.WithClients(cs))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close, context.Background())
		c, err := consumer.New(ctx, topo, consumer.Topic(topic), consumer.Subscription("follow"),
			consumer.InitialPosition(consumer.Earliest), consumer.WithClients(cs))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)

		By("writing and reading before any change")
		Expect(receiveAll(ctx, c, sendKeys(ctx, p, "before-", n))).To(BeZero())

		steps := []struct {
			name    string
			cluster int
			set     func(*topology.Cluster)
			same    bool // the cluster keeps its client
		}{
			{"a client: block", 0, func(cl *topology.Cluster) { cl.Client.OperationTimeout = 20 * time.Second }, false},
			{"a producer: block", 1, func(cl *topology.Cluster) { cl.Producer.SendTimeout = 45 * time.Second }, true},
			{"the service URL (localhost for 127.0.0.1)", 2, func(cl *topology.Cluster) {
				cl.ServiceURL = strings.Replace(cl.ServiceURL, "127.0.0.1", "localhost", 1)
			}, false},
		}
		for i, st := range steps {
			By("changing " + st.name + " of " + topo.Clusters[st.cluster].Name)
			next := &topology.Topology{Clusters: append([]topology.Cluster(nil), cs.Topology().Clusters...)}
			st.set(&next.Clusters[st.cluster])
			name := next.Clusters[st.cluster].Name
			before, err := cs.Client(name)
			Expect(err).NotTo(HaveOccurred())
			start := time.Now()
			Expect(cs.Update(ctx, next)).To(Succeed())
			GinkgoWriter.Printf("%s: Clients.Update took %v\n", st.name, time.Since(start).Round(time.Millisecond))
			after, err := cs.Client(name)
			Expect(err).NotTo(HaveOccurred())
			if st.same {
				Expect(after).To(BeIdenticalTo(before), "only the producer's settings changed: the client stays")
			} else {
				Expect(after).NotTo(BeIdenticalTo(before), "a new client for new client settings")
			}
			Expect(cs.Topology()).To(BeIdenticalTo(next))
			dups := receiveAll(ctx, c, sendKeys(ctx, p, fmt.Sprintf("after-%d-", i), n))
			GinkgoWriter.Printf("%s: %d messages written and read after the change, %d redelivered\n", st.name, n, dups)
		}
		health := c.Health(ctx)
		Expect(health).To(HaveLen(len(topo.Clusters)))
		for _, h := range health {
			Expect(h.Connected).To(BeTrue(), "%s", h.Cluster)
			Expect(h.Err).NotTo(HaveOccurred(), "%s", h.Cluster)
		}
	})
})
