//go:build e2e

package degraded

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/standalone"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/topology"
)

// early is how many messages are written to the fifth cluster before it
// is taken out, on a topic where the degraded Consumer's subscription does
// not exist there yet: it must read them once it joins.
const early = 50

var _ = Describe("consumer: one of five clusters out before New", Ordered, func() {
	for _, f := range faults {
		It(f.name+": New starts within its bound, the other four deliver at their rate, the fifth joins and its messages are read", func(sctx SpecContext) {
			bed := suite.Bed
			ctx, cancel := context.WithTimeout(sctx, 5*time.Minute)
			defer cancel()
			victim := bed.Clusters()[4]
			four := bed.Clusters()[:4]
			topic := "persistent://public/default/" + bedsuite.Unique("cdegraded")
			bedsuite.CreateTopic(ctx, bed.Clusters(), topic, 3)
			topo := withTimeouts(bed.Topology())
			opts := func(sub string) []consumer.Opt {
				return []consumer.Opt{consumer.Topic(topic), consumer.Subscription(sub),
					consumer.StartTimeout(startTimeout), consumer.ProbeInterval(probeEvery)}
			}
			keep := consumer.ConfigureClient(func(_ string, o *pulsar.ClientOptions) { o.KeepAliveInterval = keepAlive })
			writers := openWriters(ctx, four, topic)
			DeferCleanup(func() {
				for _, w := range writers {
					w.Close()
				}
			})

			suite.Step("healthy start and load")
			// A cluster an earlier spec restarted may still refuse new
			// ledgers for a while (package e2e/internal/standalone): the
			// healthy start, the baseline, waits that out; only its last
			// attempt is timed.
			var c *consumer.Consumer
			var healthyNew time.Duration
			healthySub := bedsuite.Unique("healthy")
			Expect(standalone.Retry(ctx, func() (err error) {
				t0 := time.Now()
				c, err = consumer.New(ctx, topo, append(opts(healthySub), keep)...)
				healthyNew = time.Since(t0)
				return err
			})).To(Succeed())
			healthy := offerAndRead(ctx, writers, c)
			Expect(c.Close(ctx)).To(Succeed())
			// The healthy subscription keeps these on the fifth until the
			// degraded Consumer, which has no subscription there, joins.
			writeTo(ctx, victim, topic, early)

			suite.Step("break " + victim.Name + ", degraded start and load")
			Expect(f.brk(victim)).To(Succeed())
			t1 := time.Now()
			c, err := consumer.New(ctx, topo, append(opts(bedsuite.Unique("degraded")), keep)...)
			startTook := time.Since(t1)
			Expect(err).NotTo(HaveOccurred(), "New starts with four of five clusters")
			DeferCleanup(func() { _ = c.Close(context.Background()) })
			// New waits StartTimeout for the fifth; the four subscribe as
			// fast as in the healthy start; a second is room for a JVM stall.
			startBound := startTimeout + 2*healthyNew + time.Second
			Expect(startTook).To(BeNumerically("<=", startBound))
			h := chealth(c, victim.Name)
			Expect(h.Connected).To(BeFalse())
			Expect(h.Err).To(MatchError(consumer.ErrConnect), "Health says why")
			degraded := offerAndRead(ctx, writers, c)
			for _, w := range four {
				hr := float64(healthy.read[w.Name]) / healthy.took.Seconds()
				dr := float64(degraded.read[w.Name]) / degraded.took.Seconds()
				GinkgoWriter.Printf("%s: %.0f msg/s read after a healthy start, %.0f after a degraded one: %.3f\n", w.Name, hr, dr, dr/hr)
				Expect(healthy.read[w.Name]).To(Equal(degraded.read[w.Name]), "every message offered is read")
				Expect(dr/hr).To(BeNumerically(">=", 0.95), w.Name)
			}

			// The same through shared clients with transactions, whose
			// client for the fifth is not made (keyroute.ErrNotOpen).
			t2 := time.Now()
			cs, err := keyroute.NewClients(topo, keyroute.Transactions(true), keyroute.StartTimeout(startTimeout),
				keyroute.ConfigureClient(func(_ string, o *pulsar.ClientOptions) { o.KeepAliveInterval = keepAlive }))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = cs.Close(context.Background()) })
			shared, err := consumer.New(ctx, topo, append(opts(bedsuite.Unique("shared")), consumer.WithClients(cs))...)
			sharedTook := time.Since(t2)
			Expect(err).NotTo(HaveOccurred(), "New with shared clients starts without the fifth's client")
			DeferCleanup(func() { _ = shared.Close(context.Background()) })
			Expect(sharedTook).To(BeNumerically("<=", startTimeout+startBound))
			// Not subscribed: its topic check on the admin API, or its
			// client (keyroute.ErrNotOpen), gets no answer.
			sh := chealth(shared, victim.Name)
			Expect(sh.Connected).To(BeFalse())
			Expect(sh.Err).To(MatchError(consumer.ErrConnect))
			_, err = cs.Client(victim.Name)
			Expect(err).To(MatchError(keyroute.ErrNotOpen))
			GinkgoWriter.Printf("%s: Health of the fifth: %v; with shared clients: %v\n", f.name, h.Err, sh.Err)

			suite.Step("mend " + victim.Name + " and wait for it to join")
			mending := time.Now()
			Expect(f.mend(ctx, victim)).To(Succeed())
			if victim.PID() != 0 {
				suite.Track(victim.PID())
			}
			mended := time.Now()
			// An attempt in flight may sit in pulsar-client-go's lookup
			// back-off until the operation timeout, or wait for a
			// handshake until the keep-alive; the next starts a
			// ProbeInterval after it ended, at the monitor's next tick.
			joinBound := max(opTimeout, keepAlive) + 2*probeEvery + 2*healthyNew + time.Second
			joinedAt := waitJoined(c, victim.Name, joinBound)
			Expect(joinedAt.Sub(mended)).To(BeNumerically("<=", joinBound))
			// The shared clients try a client not made every second.
			sharedJoined := waitJoined(shared, victim.Name, joinBound+time.Second)
			Expect(sharedJoined.Sub(mended)).To(BeNumerically("<=", joinBound+time.Second))

			suite.Step("read what was written on " + victim.Name + " before the Consumers subscribed there")
			for _, r := range []*consumer.Consumer{c, shared} {
				rctx, rcancel := context.WithTimeout(ctx, time.Minute)
				n := 0
				for n < early {
					m, err := r.Receive(rctx)
					Expect(err).NotTo(HaveOccurred(), "%d of the fifth's %d early messages read", n, early)
					Expect(m.ID.Cluster).To(Equal(victim.Name))
					Expect(r.Ack(rctx, m)).To(Succeed())
					n++
				}
				rcancel()
			}
			GinkgoWriter.Printf("consumer %s: healthy New %s; degraded New %s (bound %s); shared clients NewClients and New %s; "+
				"joined %s after the mend began (shared %s), which took %s (bound %s after it); the fifth's %d early messages read\n",
				f.name, healthyNew.Round(time.Millisecond), startTook.Round(time.Millisecond), startBound.Round(time.Millisecond),
				sharedTook.Round(time.Millisecond), joinedAt.Sub(mending).Round(time.Millisecond), sharedJoined.Sub(mending).Round(time.Millisecond),
				mended.Sub(mending).Round(time.Millisecond), joinBound.Round(time.Millisecond), early)
			Expect(shared.Close(ctx)).To(Succeed())
			Expect(c.Close(ctx)).To(Succeed())
			suite.Step("")
		})
	}
})

func chealth(c *consumer.Consumer, name string) consumer.ClusterHealth {
	// Health asks the clusters' admin APIs for the backlog: a stopped
	// broker's does not answer.
	ctx, cancel := context.WithTimeout(context.Background(), probeEvery)
	defer cancel()
	for _, h := range c.Health(ctx) {
		if h.Cluster == name {
			return h
		}
	}
	Fail("no cluster " + name)
	return consumer.ClusterHealth{}
}

// waitJoined waits up to bound for the named cluster to be connected and
// returns when it was first seen so.
func waitJoined(c *consumer.Consumer, name string, bound time.Duration) time.Time {
	var at time.Time
	Eventually(func() bool {
		if chealth(c, name).Connected {
			at = time.Now()
			return true
		}
		return false
	}).WithTimeout(bound).WithPolling(probeEvery/4).Should(BeTrue(), "%s joins by itself", name)
	return at
}

// openWriters opens a pulsar-client-go producer on the topic of each of
// the clusters.
func openWriters(ctx context.Context, clusters []*testbed.Cluster, topic string) map[string]pulsar.Producer {
	out := map[string]pulsar.Producer{}
	for _, cl := range clusters {
		client, err := bedsuite.Client(cl.ServiceURL, false)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(client.Close)
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: time.Millisecond})
		Expect(err).NotTo(HaveOccurred(), cl.Name)
		out[cl.Name] = p
	}
	return out
}

// writeTo writes n messages on the cluster's topic and waits for them.
func writeTo(ctx context.Context, cl *testbed.Cluster, topic string, n int) {
	client, err := bedsuite.Client(cl.ServiceURL, false)
	Expect(err).NotTo(HaveOccurred())
	defer client.Close()
	var p pulsar.Producer
	Expect(standalone.Retry(ctx, func() (err error) { // see package e2e/internal/standalone
		p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		return err
	})).To(Succeed())
	defer p.Close()
	for i := range n {
		_, err := p.Send(ctx, &pulsar.ProducerMessage{Key: fmt.Sprint("early-", i), Payload: []byte("early")})
		Expect(err).NotTo(HaveOccurred())
	}
}

// readOutcome is what one offered load read back.
type readOutcome struct {
	read map[string]int // per cluster
	took time.Duration  // from the first message offered to the last read
}

// offerAndRead offers rate messages a second, spread over the writers in
// turn, for window, from one goroutine, while c reads and acknowledges
// them on another; it returns once every message offered was read.
func offerAndRead(ctx context.Context, writers map[string]pulsar.Producer, c *consumer.Consumer) readOutcome {
	total := rate * int(window/time.Second)
	out := readOutcome{read: map[string]int{}}
	var names []string
	for name := range writers {
		names = append(names, name)
	}
	var wg sync.WaitGroup
	var last time.Time
	rctx, cancel := context.WithTimeout(ctx, window+time.Minute)
	defer cancel()
	wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer wg.Done()
		buf := make([]consumer.Message, 256)
		for n := 0; n < total; {
			k, err := c.ReceiveInto(rctx, buf)
			Expect(err).NotTo(HaveOccurred(), "%d of %d read", n, total)
			for i := range buf[:k] {
				out.read[buf[i].ID.Cluster]++
				Expect(c.Ack(rctx, &buf[i])).To(Succeed())
			}
			n += k
			last = time.Now()
		}
	}()
	// At each wake-up it sends what is due by then (see offer).
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for i := 0; i < total; {
		<-tick.C
		due := min(int(time.Since(start).Seconds()*rate), total)
		for ; i < due; i++ {
			k := fmt.Sprintf("key-%05d", i%keys)
			writers[names[i%len(names)]].SendAsync(ctx, &pulsar.ProducerMessage{Key: k, Payload: []byte(k)},
				func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					if err != nil {
						defer GinkgoRecover()
						Fail("send: " + err.Error())
					}
				})
		}
	}
	for _, w := range writers {
		Expect(w.Flush()).To(Succeed())
	}
	wg.Wait()
	out.took = last.Sub(start)
	return out
}

var _ = Describe("consumer: partitions added while it reads", func() {
	It("reads what producers wrote on a new partition before its pulsar-client-go consumer found it", func(sctx SpecContext) {
		const discoverEvery = time.Second
		ctx, cancel := context.WithTimeout(sctx, 3*time.Minute)
		defer cancel()
		cl := suite.Bed.Clusters()[0]
		topic := "persistent://public/default/" + bedsuite.Unique("cgrow")
		bedsuite.CreateTopic(ctx, []*testbed.Cluster{cl}, topic, 2)
		topo := withTimeouts(suite.Bed.Topology())
		topo.Clusters = topo.Clusters[:1]
		sub := bedsuite.Unique("grow")
		c, err := consumer.New(ctx, topo, consumer.Topic(topic), consumer.Subscription(sub),
			consumer.PartitionsAutoDiscoveryInterval(discoverEvery))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = c.Close(context.Background()) })

		grew := time.Now()
		Expect(adminCall(ctx, http.MethodPost, cl.AdminURL+"/admin/v2/persistent/public/default/"+path.Base(topic)+"/partitions", "3")).To(Succeed())
		// What the broker did on its own, for the record: the consumer
		// does not rely on it.
		var subs []string
		err = adminJSON(ctx, cl.AdminURL+"/admin/v2/persistent/public/default/"+path.Base(topic)+"-partition-2/subscriptions", &subs)
		GinkgoWriter.Printf("subscriptions on the new partition right after the update: %v (%v)\n", subs, err)
		writeTo(ctx, cl, topic+"-partition-2", early)

		// Found at the next discovery, at the latest an interval after the
		// update, the lookup bounded by the operation timeout.
		bound := 2*discoverEvery + opTimeout
		rctx, rcancel := context.WithTimeout(ctx, bound)
		defer rcancel()
		for n := 0; n < early; n++ {
			m, err := c.Receive(rctx)
			Expect(err).NotTo(HaveOccurred(), "%d of %d written on the new partition read", n, early)
			Expect(m.ID.Partition).To(Equal(2))
			Expect(c.Ack(rctx, m)).To(Succeed())
		}
		GinkgoWriter.Printf("the new partition's %d messages read %s after the update (bound %s)\n",
			early, time.Since(grew).Round(time.Millisecond), bound)
	})
})

// adminCall sends body to an admin API URL and fails unless it answers 2xx.
func adminCall(ctx context.Context, method, url, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, b)
	}
	return nil
}

// adminJSON GETs an admin API URL into v.
func adminJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

var _ = Describe("consumer: Update on real clusters", func() {
	It("adds a cluster at Earliest, drains a removed one until its backlog is 0, reconnects a changed one without skipping", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 5*time.Minute)
		defer cancel()
		all := suite.Bed.Clusters()
		topic := "persistent://public/default/" + bedsuite.Unique("cupdate")
		bedsuite.CreateTopic(ctx, all, topic, 3)
		full := withTimeouts(suite.Bed.Topology())
		pick := func(from, to int) *topology.Topology {
			t := *full
			t.Clusters = slices.Clone(full.Clusters[from:to])
			return &t
		}
		sub := bedsuite.Unique("update")
		c, err := consumer.New(ctx, pick(0, 4), consumer.Topic(topic), consumer.Subscription(sub),
			consumer.ProbeInterval(probeEvery), consumer.DrainTimeout(time.Minute))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = c.Close(context.Background()) })
		readFrom := func(cluster string, n int, ack bool) []string {
			rctx, rcancel := context.WithTimeout(ctx, time.Minute)
			defer rcancel()
			var got []string
			for len(got) < n {
				m, err := c.Receive(rctx)
				Expect(err).NotTo(HaveOccurred(), "%d of %d from %s", len(got), n, cluster)
				Expect(m.ID.Cluster).To(Equal(cluster))
				got = append(got, m.Key)
				if ack {
					Expect(c.Ack(rctx, m)).To(Succeed())
				}
			}
			return got
		}

		suite.Step("add the fifth, which producers wrote to first")
		fifth := all[4]
		hold(ctx, fifth, topic) // a subscription that keeps what is written
		writeTo(ctx, fifth, topic, early)
		// An earlier spec may have restarted the fifth: its subscribe can
		// meet the bookie flapping (e2e/internal/standalone), which Update
		// refuses as an answer, the old set running on. Only the last
		// attempt is timed.
		var addTook time.Duration
		Expect(standalone.Retry(ctx, func() error {
			t0 := time.Now()
			err := c.Update(ctx, pick(0, 5))
			addTook = time.Since(t0)
			return err
		})).To(Succeed())
		Expect(chealth(c, fifth.Name).Connected).To(BeTrue())
		readFrom(fifth.Name, early, true)

		suite.Step("remove the first, with a backlog")
		first := all[0]
		writeTo(ctx, first, topic, early)
		Expect(c.Update(ctx, pick(1, 5))).To(Succeed())
		Expect(chealth(c, first.Name).Draining).To(BeTrue(), "read until drained")
		t1 := time.Now()
		readFrom(first.Name, early, true)
		// Acknowledgements go within the grouping time; the drain looks at
		// the backlog every ProbeInterval, a look bounded by the operation
		// timeout.
		drainBound := consumer.DefaultAckGroupingTime + 2*probeEvery + opTimeout
		Eventually(func() []string {
			var names []string
			for _, h := range c.Health(ctx) {
				names = append(names, h.Cluster)
			}
			return names
		}).WithTimeout(drainBound).WithPolling(probeEvery / 4).ShouldNot(ContainElement(first.Name))
		drainTook := time.Since(t1)

		suite.Step("reconnect the second under another URL")
		second := all[1]
		writeTo(ctx, second, topic, 10)
		before := readFrom(second.Name, 5, false) // delivered, not acknowledged
		moved := pick(1, 5)
		moved.Clusters[0].ServiceURL = strings.Replace(moved.Clusters[0].ServiceURL, "127.0.0.1", "localhost", 1)
		t2 := time.Now()
		Expect(c.Update(ctx, moved)).To(Succeed())
		reconnectTook := time.Since(t2)
		after := readFrom(second.Name, 10, true)
		Expect(after).To(ContainElements(before), "the unacknowledged come again")
		Expect(slices.Compact(slices.Sorted(slices.Values(after)))).To(HaveLen(10), "nothing skipped")
		GinkgoWriter.Printf("consumer Update: add %s (then its %d early messages read), drain %s after the removal (bound %s), reconnect %s\n",
			addTook.Round(time.Millisecond), early, drainTook.Round(time.Millisecond), drainBound, reconnectTook.Round(time.Millisecond))
		Expect(c.Close(ctx)).To(Succeed())
		suite.Step("")
	})
})

// hold makes a subscription on the cluster's topic, so that what is
// written there is kept until a later subscription reads it.
func hold(ctx context.Context, cl *testbed.Cluster, topic string) {
	client, err := bedsuite.Client(cl.ServiceURL, false)
	Expect(err).NotTo(HaveOccurred())
	defer client.Close()
	var c pulsar.Consumer
	Expect(standalone.Retry(ctx, func() (err error) { // see package e2e/internal/standalone
		c, err = client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: bedsuite.Unique("holder")})
		return err
	})).To(Succeed())
	c.Close()
}
