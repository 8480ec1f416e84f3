//go:build e2e

package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/consume"
	"github.com/keyroute/keyroute/e2e/internal/standalone"
	"github.com/keyroute/keyroute/producer"
)

// The recovery specs stall one cluster for longer than the producer's send
// timeout, so that every message it held has failed by the time it is
// back: nothing is left to be acknowledged, and only the producer's own
// probe can see it recover. Before the producer probed down clusters, a
// cluster that got no new messages while down (Spill, keyless traffic)
// never came back.
const (
	recoverySendTimeout = 2 * time.Second
	stall               = 3 * recoverySendTimeout
	probeEvery          = producer.DefaultDownProbeInterval
)

// sendTimeoutSweep is how long after its hand-over a message that gets no
// ack can still be waiting for ErrSendTimeout: twice the send timeout.
// pulsar-client-go v0.21.0 sweeps each partition's pending queue on a
// timer (producer_partition.go, failTimeoutMessages); after failing the
// messages that timed out it re-arms the timer for a whole SendTimeout,
// not for the time the next message has left (the branch that would is
// unreachable: CompareAndPoll returns nil first), so a message queued just
// after a sweep's cut waits until the next sweep.
func sendTimeoutSweep(sendTimeout time.Duration) time.Duration { return 2 * sendTimeout }

// reconnectStep bounds how long a writer of a restarted cluster can take
// to try again once the broker is back: pulsar-client-go v0.21.0 retries a
// partition producer's reconnection after a backoff that doubles from
// 100ms up to 60s, plus up to 20% jitter (backoff.DefaultBackoff). Seen
// here: writes again 31s after the cluster was seen up in 3 of 8 runs
// (1s to 3s in the others), which fits a 25.6s step begun before the
// restart ended; the spec used to wait a minute.
const reconnectStep = 60 * time.Second * 12 / 10

// sent is one message of a traffic run and, once known, its outcome.
type sent struct {
	key, value string
	own        string    // the key's Placement; "" for a keyless message
	at         time.Time // when its hand-over began
	id         producer.ID
	err        error
	done       bool
}

// traffic sends keyed messages round-robin over keys (keyless ones when
// keys is empty) at 1,000 a second from one goroutine, and records every
// outcome. Hand-overs take the spec's ctx: under Spill and for keyless
// messages no share fills, so none waits.
type traffic struct {
	p *producer.Producer

	mu   sync.Mutex
	msgs []*sent

	stop, done chan struct{}
}

func startTraffic(ctx context.Context, p *producer.Producer, keys []string) *traffic {
	t := &traffic{p: p, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; {
			select {
			case <-t.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for j := 0; j < 10; j++ {
				s := &sent{value: fmt.Sprintf("kl|%d", i)}
				if len(keys) > 0 {
					s.key = keys[i%len(keys)]
					s.value = fmt.Sprintf("%s|%d", s.key, i/len(keys))
					s.own, _ = p.Placement(s.key)
				}
				i++
				s.at = time.Now()
				t.mu.Lock()
				t.msgs = append(t.msgs, s)
				t.mu.Unlock()
				p.SendAsync(ctx, &producer.Message{Key: s.key, Value: []byte(s.value)}, func(id producer.ID, _ *producer.Message, err error) {
					t.mu.Lock()
					s.id, s.err, s.done = id, err, true
					t.mu.Unlock()
				})
			}
		}
	}()
	return t
}

// end stops sending and waits for every outcome.
func (t *traffic) end(ctx context.Context) {
	close(t.stop)
	<-t.done
	Expect(t.p.Flush(ctx)).To(Succeed())
}

// snapshot returns a copy of every message sent so far.
func (t *traffic) snapshot() []sent {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]sent, len(t.msgs))
	for i, s := range t.msgs {
		out[i] = *s
	}
	return out
}

// lookup asks a cluster for the partitions of topic through a plain
// pulsar-client-go client, retrying while a restarted standalone flaps.
func lookup(ctx context.Context, client pulsar.Client, topic string) error {
	return standalone.Retry(ctx, func() error {
		_, err := client.TopicPartitions(topic)
		return err
	})
}

// recovery is one recovery spec: which cluster breaks and how, the traffic
// and the producer's settings.
type recovery struct {
	name   string
	victim int // index in bed.Clusters()
	policy producer.DownPolicy
	keyed  bool // keyed traffic (else keyless only)
	kill   bool // SIGKILL then Restart (else SIGSTOP then SIGCONT)
	// opTimeout is every cluster client's OperationTimeout (topology
	// Client settings); 0 keeps pulsar-client-go's default (30s). The
	// producer's probe is one lookup bounded by it (see
	// producer.DownProbeInterval). A paused broker keeps its connection
	// and answers the probe in flight as soon as it resumes; a killed one
	// refuses connections, and pulsar-client-go then retries the lookup
	// inside the same call with a doubling backoff until the operation
	// timeout, so with the default a restarted cluster may not be probed
	// again for up to 30s (seen: 10.4s after it answered). The kill spec
	// sets it, and its bound follows from it.
	opTimeout time.Duration
}

// recoverySpec breaks a cluster for stall, mends it, and checks that the
// producer sees it up again within a bound derived from its settings and
// from what the mended JVM itself took to answer, measured in the same spec.
func recoverySpec(r recovery) {
	It(r.name, func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 5*time.Minute)
		defer cancel()
		victim := bed.Clusters()[r.victim]
		policy, keyed, kill := r.policy, r.keyed, r.kill
		topic := newTopic(ctx, "recovery")
		topo := bed.Topology()
		for i := range topo.Clusters {
			topo.Clusters[i].Client.OperationTimeout = r.opTimeout
		}
		var p *producer.Producer
		err := standalone.Retry(ctx, func() (err error) {
			p, err = producer.New(ctx, topo, producer.Topic(topic), producer.OnClusterDown(policy),
				producer.SendTimeout(recoverySendTimeout), producer.DownAfter(downAfter), producer.DownProbeInterval(probeEvery))
			return err
		})
		Expect(err).NotTo(HaveOccurred())
		defer p.Close(ctx)

		// The baseline's client: a plain one, connected before the fault.
		client, err := bedsuite.Client(victim.ServiceURL, false)
		Expect(err).NotTo(HaveOccurred())
		defer client.Close()
		Expect(lookup(ctx, client, topic)).To(Succeed())

		var keys, victimKeys []string
		if keyed {
			for i := 0; i < 100; i++ {
				k := fmt.Sprintf("rk-%03d", i)
				keys = append(keys, k)
				if c, _ := p.Placement(k); c == victim.Name {
					victimKeys = append(victimKeys, k)
				}
			}
			Expect(victimKeys).NotTo(BeEmpty())
		}
		tr := startTraffic(ctx, p, keys)
		ended := false
		defer func() {
			if !ended {
				close(tr.stop)
				<-tr.done
			}
		}()
		time.Sleep(recoverySendTimeout) // healthy traffic first

		// Break it, and see it reported down.
		t0 := time.Now()
		if kill {
			Expect(victim.Kill()).To(Succeed())
		} else {
			Expect(victim.Pause()).To(Succeed())
		}
		mended := false
		defer func() { // a failed spec leaves the cluster as it found it
			switch {
			case mended:
			case kill:
				_ = victim.Restart(context.Background())
			default:
				_ = victim.Resume()
			}
		}()
		broken := time.Since(t0)
		// Keyed traffic holds messages on the victim all along: down at the
		// first tick DownAfter after the last ack was seen (a tick after it
		// came), one tick late at most, one poll. Keyless traffic reaches
		// the victim only in the runs the producer places there, at random:
		// it need only be seen down within the stall.
		detectBound := broken + downAfter + 3*tick + poll
		if !keyed {
			detectBound = stall
		}
		Eventually(func() bool { return !health(p, victim.Name).Up }).WithTimeout(detectBound).WithPolling(poll).
			Should(BeTrue(), "%s reported down within %s", victim.Name, detectBound)
		detected := time.Now()
		detect := detected.Sub(t0)
		// Whatever it held was handed over before it was marked down and
		// fails at its send timeout; after that it holds nothing. The
		// stall lasts until then, and at least 3 send timeouts.
		Eventually(func() int64 { return health(p, victim.Name).PendingMessages }).
			WithTimeout(sendTimeoutSweep(recoverySendTimeout)+2*tick+poll).WithPolling(poll).Should(BeZero(),
			"the messages %s held fail at their send timeout", victim.Name)
		drained := time.Since(t0)
		time.Sleep(time.Until(t0.Add(stall)))
		h := health(p, victim.Name)
		Expect(h.Up).To(BeFalse(), "no probe answers while the cluster is broken")
		Expect(h.PendingMessages).To(BeZero())

		// Mend it. The baseline is how long the cluster itself takes to
		// answer a topic lookup, the producer's probe, from a plain client.
		t1 := time.Now()
		upAfter := make(chan time.Duration, 1)
		go func() {
			defer GinkgoRecover()
			for ctx.Err() == nil {
				if health(p, victim.Name).Up {
					upAfter <- time.Since(t1)
					return
				}
				time.Sleep(poll)
			}
		}()
		var restartTook time.Duration
		if kill {
			Expect(victim.Restart(ctx)).To(Succeed())
			restartTook = time.Since(t1)
			fresh, err := bedsuite.Client(victim.ServiceURL, false) // the old one's connection died with the JVM
			Expect(err).NotTo(HaveOccurred())
			defer fresh.Close()
			client = fresh
		} else {
			Expect(victim.Resume()).To(Succeed())
		}
		mended = true
		Expect(lookup(ctx, client, topic)).To(Succeed())
		baseline := time.Since(t1)
		// The probe in flight answers once the JVM does, or the next one
		// does: a new probe starts DownProbeInterval after the last began,
		// and, against refused connections, one probe's own attempts are
		// never further apart than the operation timeout that ends it.
		// The monitor flips the state at its next tick; one poll.
		gap := probeEvery
		if kill {
			gap = max(probeEvery, r.opTimeout)
		}
		bound := baseline + gap + tick + poll
		var recovered time.Duration
		// Wait past the bound (a minute) so that a late recovery is
		// measured, then hold it to the bound.
		Eventually(upAfter).WithTimeout(time.Minute).Should(Receive(&recovered), "%s never seen up again", victim.Name)
		upAt := t1.Add(recovered)
		GinkgoWriter.Printf("%s: detected down %s after the fault, holding nothing %s after it, mended after %s; mend: restart %s, plain lookup answered %s after the mend began; producer saw it up after %s (bound %s)\n",
			victim.Name, detect.Round(time.Millisecond), drained.Round(time.Millisecond), t1.Sub(t0).Round(time.Millisecond), restartTook.Round(time.Millisecond),
			baseline.Round(time.Millisecond), recovered.Round(time.Millisecond), bound.Round(time.Millisecond))
		Expect(recovered).To(BeNumerically("<=", bound), "%s up within %s of the mend (baseline %s)", victim.Name, bound, baseline)

		// Written there again: keyed messages of the victim's keys (and,
		// keyless only, keyless messages placed on it) name it in their
		// IDs. A restarted cluster's writers reconnect on their own
		// schedule, so what they were handed may time out first: each
		// tries again within a reconnect step; a send timeout later, its
		// messages are acknowledged.
		again := func() bool {
			for _, s := range tr.snapshot() {
				if s.at.After(upAt) && s.done && s.err == nil && s.id.Cluster == victim.Name {
					return true
				}
			}
			return false
		}
		Eventually(again).WithTimeout(reconnectStep+recoverySendTimeout+poll).WithPolling(poll).Should(BeTrue(), "%s written to again", victim.Name)
		againAt := time.Now()
		GinkgoWriter.Printf("  its messages written there again %s after it was seen up\n", againAt.Sub(upAt).Round(time.Millisecond))
		time.Sleep(2 * recoverySendTimeout)
		tr.end(ctx)
		ended = true
		all := tr.snapshot()
		if !keyed {
			// The keyless traffic told nothing of keyed messages.
			s := sent{key: "after-" + victim.Name, value: "after", at: time.Now(), done: true}
			s.own, _ = p.Placement(s.key)
			s.id, s.err = p.Send(ctx, &producer.Message{Key: s.key, Value: []byte(s.value)})
			Expect(s.err).NotTo(HaveOccurred())
			Expect(s.id.Cluster).To(Equal(s.own))
			all = append(all, s)
		}

		// Each message's outcome, against the phase it was handed over
		// in. The victim's messages are its keys' (keyed) or all
		// (keyless): on it before the fault, elsewhere while it was down,
		// on it again after.
		var beforeOn, downElsewhere, afterN, afterOn, failed int
		for _, s := range all {
			Expect(s.done).To(BeTrue(), "every message has an outcome")
			if s.err != nil {
				failed++
				se, ok := errors.AsType[*producer.SendError](s.err)
				Expect(ok).To(BeTrue(), "%s: %v", s.value, s.err)
				Expect(se.Cluster).To(Equal(victim.Name), "%s failed on a healthy cluster: %v", s.value, s.err)
				Expect(producer.Reason(s.err)).To(Equal(producer.ReasonSendTimeout), "%s: %v", s.value, s.err)
				Expect(producer.NotWritten(s.err)).To(BeFalse(), "a send timeout leaves the outcome unknown")
				continue
			}
			if s.own != "" && s.own != victim.Name {
				Expect(s.id.Cluster).To(Equal(s.own), "%s is not the victim's: it stays on its own cluster", s.value)
				continue
			}
			switch {
			case s.at.Before(t0):
				if s.id.Cluster == victim.Name {
					beforeOn++
				}
				if keyed {
					Expect(s.id.Cluster).To(Equal(victim.Name), s.value)
				}
			case s.at.After(detected) && s.at.Before(upAt.Add(-poll)):
				// Routed while down: spilled to the key's next cluster, or
				// placed on an up one.
				Expect(s.id.Cluster).NotTo(Equal(victim.Name), "%s handed over while %s was down", s.value, victim.Name)
				downElsewhere++
			case s.at.After(againAt):
				afterN++
				if s.id.Cluster == victim.Name {
					afterOn++
				}
				if keyed && !kill {
					Expect(s.id.Cluster).To(Equal(victim.Name), "%s handed over after %s was up again", s.value, victim.Name)
				}
			}
		}
		GinkgoWriter.Printf("  %d messages; failed %d (send timeout, all on %s); the victim's (%s): %d on it before the fault, %d elsewhere while it was down, %d of %d on it again after\n",
			len(all), failed, victim.Name, map[bool]string{true: "its keys", false: "keyless"}[keyed], beforeOn, downElsewhere, afterOn, afterN)
		Expect(downElsewhere).To(BeNumerically(">", 0))
		Expect(afterOn).To(BeNumerically(">", 0))
		Expect(p.Close(ctx)).To(Succeed())
		verifyWritten(ctx, topic, all)
	})
}

// verifyWritten reads the topic back on every cluster: every acknowledged
// message exactly once, on the cluster its ID names; besides, only
// messages whose outcome was unknown (a send timeout), at most once.
func verifyWritten(ctx context.Context, topic string, all []sent) {
	GinkgoHelper()
	byValue := map[string]sent{}
	want := 0
	for _, s := range all {
		byValue[s.value] = s
		if s.err == nil {
			want++
		}
	}
	Expect(want).To(BeNumerically(">", 0))
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	got, err := consume.All(cctx, bed.Clusters(), topic, "verify", want, 3*time.Second)
	if err != nil {
		GinkgoWriter.Printf("consume: %v (checking what arrived)\n", err)
	}
	seen := map[string]int{}
	unknown := 0
	for _, m := range got {
		seen[m.Payload]++
		Expect(seen[m.Payload]).To(Equal(1), "duplicate %s on %s", m.Payload, m.Cluster)
		s, ok := byValue[m.Payload]
		Expect(ok).To(BeTrue(), "unknown payload %q on %s", m.Payload, m.Cluster)
		if s.err != nil {
			unknown++
			continue
		}
		Expect(m.Cluster).To(Equal(s.id.Cluster), "%s read back where its ID says", m.Payload)
	}
	missing := 0
	for v, s := range byValue {
		if s.err == nil && seen[v] == 0 {
			missing++
		}
	}
	GinkgoWriter.Printf("  read back %d of %d acknowledged, plus %d whose outcome was unknown\n", len(got)-unknown, want, unknown)
	Expect(missing).To(BeZero(), "acknowledged but not read back")
}
