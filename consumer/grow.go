package consumer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Partition growth. The Consumer looks each cluster's partition count up
// itself, every PartitionsAutoDiscoveryInterval, and subscribes the new
// partitions of a cluster whose topic grew, each with a pulsar-client-go
// consumer of its own (link.more) at Earliest, so that nothing producers
// wrote there before the Consumer found them is skipped
// (router/HANDOVER.md, section 9). The old partitions keep their
// consumers, receive queues, acknowledgements and delivered frontiers:
// their messages go on flowing, and none comes again. The new parts join
// the read set when all are subscribed; until then Health says Growing,
// and a failed attempt (PartitionsErr) is tried again at the next lookup.
//
// A subscription that is one stream over every partition (link.whole: a
// Retry subscription, whose pulsar-client-go consumer also reads the
// retry topic, and fakes) is subscribed again over all of them instead
// (regrow): the cluster is not read meanwhile, and messages delivered
// and not acknowledged come again.

// discoveryOff is the AutoDiscoveryPeriod given to pulsar-client-go: its
// discovery never runs (a partition topic has nothing to discover; with
// Retry, v0.21.0's, when subscribing one new partition fails, closes the
// old partitions' consumers for good: apache/pulsar-client-go#1426).
const discoveryOff = time.Duration(math.MaxInt64)

// errGrowing is the state of a whole-stream cluster between the
// subscription that read its old partitions and the one over all of them.
var errGrowing = errors.New("the topic's partitions grew: subscribing again over all of them")

// errShrunk is Health's PartitionsErr for a count below the one subscribed.
var errShrunk = errors.New("the topic's partition count shrank (Pulsar cannot shrink a partitioned topic: was it deleted and made again?)")

// discover starts, for every member subscribed whose last lookup was a
// PartitionsAutoDiscoveryInterval ago, a lookup of its partition count;
// the monitor calls it.
func (c *Consumer) discover(now time.Time) {
	for _, m := range c.set.Load().members {
		k := m.cur.Load()
		asked := m.lookNow.Swap(false)
		if k == nil || k.link.partitions == nil || m.removed.Load() || (now.Sub(m.discovered) < c.cfg.discoverEvery && !asked) {
			continue
		}
		m.discovered = now // the monitor's own field
		c.goOnce(&m.discovering, func() {
			n, err := k.link.partitions()
			if err != nil { // the probe reports the cluster's trouble
				return
			}
			switch had := k.partCount(); {
			case n > had && k.link.more != nil:
				c.grow(m, k, had, n)
			case n > had:
				m.partsErr.Store(nil)
				c.regrow(m, k, n)
			case n < had:
				if m.partsErr.Swap(&errShrunk) == nil {
					c.log().Error("keyroute: the topic's partition count shrank; reading the partitions subscribed",
						"cluster", m.name, "topic", c.cfg.topic, "subscribed", had, "now", n)
				}
			default:
				m.partsErr.Store(nil)
			}
		})
	}
}

// grow subscribes partitions [had, n) of k, m's subscription, and adds
// them to k's parts and the read set; the old parts are not touched. It
// holds seekMu, so that a seek moves either the old parts alone, before,
// or every part, after. A failure leaves the parts as they were and is
// Health's PartitionsErr until an attempt succeeds.
func (c *Consumer) grow(m *member, k *cluster, had, n int) {
	m.growing.Store(true)
	defer m.growing.Store(false)
	c.log().Info("keyroute: the topic's partitions grew; subscribing the new ones",
		"cluster", m.name, "topic", c.cfg.topic, "from", had, "to", n)
	c.seekMu.Lock()
	defer c.seekMu.Unlock()
	streams, err := k.link.more(c.joinCtx, had, n)
	if err != nil {
		err = clusterErr(m.name, "partitions", fmt.Errorf("subscribe partitions %d to %d: %w", had, n-1, brokerError(err)))
		m.partsErr.Store(&err)
		c.log().Warn("keyroute: subscribing the new partitions failed; trying again at the next lookup", "cluster", m.name, "error", err)
		return
	}
	c.setMu.Lock()
	if c.joinsStopped || m.cur.Load() != k || k.gone.Load() {
		c.setMu.Unlock()
		for _, s := range streams {
			s.Close()
		}
		return
	}
	ps := append(slices.Clip(*k.parts.Load()), k.newParts(streams, had)...)
	k.parts.Store(&ps)
	c.publish(c.set.Load().members)
	c.setMu.Unlock()
	m.partsErr.Store(nil)
}

// regrow replaces k, m's subscription over parts it had, by one over all
// n partitions: k leaves the read set, and is closed once what was
// taken from it is acknowledged (see awaitAcks; its grouped
// acknowledgements are sent then), then a join attempt subscribes again
// at Earliest. Holds waiting on k end reported, as at a reconnect, but the
// partitions' frontiers stay (see holder.forget).
func (c *Consumer) regrow(m *member, k *cluster, n int) {
	c.setMu.Lock()
	// m.trying is this goroutine's until it has subscribed again: the
	// monitor starts no attempt of its own while k is still open.
	if c.joinsStopped || m.removed.Load() || m.cur.Load() != k || !m.trying.CompareAndSwap(false, true) {
		c.setMu.Unlock()
		return
	}
	defer m.trying.Store(false)
	m.growing.Store(true)
	defer m.growing.Store(false)
	m.cur.Store(nil)
	m.jmu.Lock()
	m.late, m.err = true, errGrowing
	m.jmu.Unlock()
	c.publish(c.set.Load().members)
	c.setMu.Unlock()
	c.log().Info("keyroute: the topic's partitions grew; subscribing again over all of them",
		"cluster", m.name, "topic", c.cfg.topic, "from", k.partCount(), "to", n)
	clean := c.awaitAcks(m)
	c.hold.forget(k, forgetKeepFrontiers)
	k.close()
	if clean && c.cfg.subType == Exclusive {
		c.skipAcknowledged(m, k.partCount())
	}
	c.joinAttempt(c.joinCtx, m) // on this goroutine, which Close waits for
}

// skipAcknowledged has the next subscription of m drop, and acknowledge
// again, the messages of its first parts partitions at or before the
// highest position taken from each, for HoldTimeout or until the
// partition's first message past it. Every message delivered was
// acknowledged (see awaitAcks), so those that come again are ones whose
// acknowledgement the broker did not record: pulsar-client-go sends
// acknowledgements without waiting for an answer, and one lost (as to a
// reconnect, apache/pulsar-client-go#389) is not sent again; a new
// subscription gets those messages again (a growth's did, in e2e/handover).
// Only for an Exclusive subscription: on the others, other consumers take
// positions at or before the highest this one took.
func (c *Consumer) skipAcknowledged(m *member, parts int) {
	until := time.Now().Add(c.cfg.holdTimeout)
	s := c.cfg.skip
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, pos := range c.hold.frontiers(m, parts) {
		if pos != nil {
			s.set(skipKey{m.name, int32(p)}, skipAt{pos: *pos, until: until})
		}
	}
}

// awaitAcks waits, up to one ProbeInterval, until every message m
// delivered was acknowledged or nacked, so that the acknowledgement a
// caller makes right after a take still reaches the subscription it came
// from (Ack goes to a message's own subscription until it is closed)
// rather than making it come again. A cumulative acknowledgement counts
// once: the wait then lasts the bound. It reports whether every message
// delivered was acknowledged (none nacked, none left).
func (c *Consumer) awaitAcks(m *member) bool {
	end := time.Now().Add(c.cfg.probeEvery)
	for {
		time.Sleep(time.Millisecond) // takes under way count what they took
		acked, delivered := m.acked.Load(), m.delivered.Load()
		if acked >= delivered {
			return true
		}
		if acked+m.nacked.Load() >= delivered || time.Now().After(end) {
			return false
		}
		select {
		case <-c.closing:
			return false
		default:
		}
	}
}

// partitionsErr is Health's PartitionsErr for m.
func (m *member) partitionsErr() error {
	if p := m.partsErr.Load(); p != nil {
		return clusterErr(m.name, "partitions", *p)
	}
	return nil
}
