package consumer

import (
	"context"
	"sync"
	"time"
)

// ClusterHealth is the state of one cluster's subscription.
type ClusterHealth struct {
	// Topic is the row's topic when the Consumer reads several (Topics),
	// "" otherwise.
	Topic   string
	Cluster string
	// Connected is false until the cluster is subscribed (it did not
	// answer New, or an Update, in time: see StartTimeout), and while its
	// last probe failed or a probe has been unanswered for longer than
	// ProbeInterval.
	Connected bool
	// Err says why a cluster that is not subscribed is not: a
	// *ClusterError matching ErrConnect, with its last attempt's error, or
	// saying that no attempt has ended yet (one that gets no answer lasts
	// up to the cluster's operation timeout). nil once subscribed.
	Err error
	// Draining is true for a cluster an Update removed that is still read
	// until its subscription's backlog is 0 (see Update); such clusters
	// come after the topology's.
	Draining bool
	// Partitions is the topic's partition count the subscription reads,
	// 0 while not subscribed; it follows growth (see
	// PartitionsAutoDiscoveryInterval). PartitionsErr is set while the
	// count looked up is below it (Pulsar cannot shrink a partitioned
	// topic: it was deleted and made again), nil otherwise.
	Partitions    int
	PartitionsErr error
	// Growing is true while the topic has more partitions there than
	// Partitions and the new ones are being subscribed (the others are
	// read on meanwhile); a failed attempt is PartitionsErr, and the next
	// lookup tries again.
	Growing bool
	// Delivered counts the messages of the cluster handed to the caller:
	// returned by Receive or ReceiveBatch, or taken from Chan (messages
	// received from the broker but not yet taken, or dropped by SeekByTime
	// or Close, are not counted).
	Delivered uint64
	// Redelivered counts the Delivered messages whose RedeliveryCount was
	// above 0. The broker keeps that count in memory: messages that come
	// again after a broker restart (or a new consumer process) count 0.
	Redelivered uint64
	// Acked counts the acknowledgements (Ack, AckID, AckCumulative,
	// AckIDCumulative; a cumulative one counts once) that reached the
	// cluster's pulsar-client-go consumer without error; Nacked, the Nack
	// and NackID calls.
	Acked, Nacked uint64
	// Lag is now minus the publish time of the last message delivered, 0
	// before the first.
	Lag time.Duration
	// Backlog is the subscription's backlog on the cluster (messages not
	// yet acknowledged), from the cluster's admin API; -1 when the
	// topology gives no admin URL, the call failed (BacklogErr), or the
	// cluster is not subscribed (BacklogErr is Err).
	Backlog    int64
	BacklogErr error
	// The hand-over of moving keys (router/HANDOVER.md): Held is how many
	// of the cluster's messages are held now, HeldTotal how many were
	// ever held; Markers counts the markers taken (never delivered,
	// acknowledged once within their partition's delivered frontier);
	// ForcedReleases counts the messages delivered before an origin they
	// owed passed (an origin without progress for HoldTimeout, MaxHeld on a
	// Retry subscription, an origin on a cluster not read);
	// Unordered counts the moved messages their producer sent without an
	// origin it owed; BadHandover counts the messages whose keyroute-
	// properties did not follow HANDOVER.md (delivered as they are);
	// HoldTime sums the time the released messages were held (HoldTime /
	// HeldTotal is the mean delay a hold added). See HandoverObserver for
	// each forced release.
	Held                                                       int64
	HoldTime                                                   time.Duration
	HeldTotal, Markers, ForcedReleases, Unordered, BadHandover uint64
}

// Health returns the state of every cluster, in topology order, then the
// clusters an Update removed that are still draining. It asks the admin
// API of each cluster that has one for the backlog, in parallel, bounded
// by ctx; the rest is read from counters. After Close
// the counts are final (Connected is the last probe's answer) and the
// backlog is not asked for (BacklogErr matches ErrClosed).
func (c *Consumer) Health(ctx context.Context) []ClusterHealth {
	if c == nil {
		return nil
	}
	if c.subs != nil {
		return c.healthTopics(ctx)
	}
	members := c.set.Load().members
	out := make([]ClusterHealth, len(members))
	var wg sync.WaitGroup
	for i, k := range members {
		h := &out[i]
		cur := k.cur.Load()
		*h = ClusterHealth{
			Topic: c.cfg.idTopic, Cluster: k.name, Connected: cur != nil && k.connected(c.cfg.probeEvery), Draining: k.draining.Load(),
			Delivered: k.delivered.Load(), Acked: k.acked.Load(), Nacked: k.nacked.Load(),
			Redelivered: k.redelivered.Load(), Lag: since(k.lastPublish.Load()), Backlog: -1,
		}
		k.hold.health(h)
		h.PartitionsErr = k.partitionsErr()
		h.Growing = k.growing.Load()
		if cur != nil {
			h.Partitions = cur.partCount()
		}
		if cur == nil { // not asked: its admin API may not answer either
			h.BacklogErr = c.connectError(k, k.lastErr())
			if !h.Growing { // a whole-stream growth (grow.go) is a state
				h.Err = h.BacklogErr
			}
			continue
		}
		if !k.knowsBacklog() {
			continue
		}
		if c.closed.Load() {
			h.BacklogErr = clusterErr(k.name, "backlog", ErrClosed)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := k.backlog(ctx, c.cfg)
			if err != nil {
				h.BacklogErr = clusterErr(k.name, "backlog", err)
				return
			}
			h.Backlog = n
		}()
	}
	wg.Wait()
	return out
}

// backlog asks m's admin API for the subscription's backlog (a fake's
// subscription tells it itself).
func (m *member) backlog(ctx context.Context, c cfg) (int64, error) {
	partitioned := true // not subscribed yet: ask as for a partitioned topic
	if k := m.cur.Load(); k != nil {
		if k.link.backlog != nil {
			return k.link.backlog()
		}
		partitioned = k.link.partitioned
	}
	if m.admin() == nil {
		return -1, errNoAdmin
	}
	return m.admin().backlog(ctx, c.topic, c.subscription, partitioned)
}

// knowsBacklog reports whether m's backlog can be asked.
func (m *member) knowsBacklog() bool {
	if k := m.cur.Load(); k != nil && k.link.backlog != nil {
		return true
	}
	return m.admin() != nil
}

func (k *member) connected(interval time.Duration) bool {
	if !k.probeOK.Load() {
		return false
	}
	return since(k.probeStart.Load()) <= interval
}

// monitor probes every cluster each ProbeInterval, one probe per cluster
// at a time, until Close.
func (c *Consumer) monitor() {
	defer c.bg.Done()
	t := time.NewTicker(c.cfg.probeEvery)
	defer t.Stop()
	for {
		select {
		case <-c.closing:
			return
		case <-t.C:
		}
		c.hold.tick()
		c.cfg.skip.expire(time.Now())
		now := time.Now()
		for _, m := range c.set.Load().members {
			k := m.cur.Load()
			if k == nil || k.link.probe == nil || m.probeStart.Load() != 0 {
				continue
			}
			m.probeStart.Store(now.UnixNano())
			c.probes.Add(1)
			go func() {
				defer c.probes.Done()
				err := k.link.probe()
				m.probeOK.Store(err == nil)
				m.probeStart.Store(0)
			}()
		}
		c.retryJoins(now)
		c.checkDrains(now)
		c.discover(now)
	}
}
