package consumer

import (
	"context"
	"sync"
	"time"
)

// ClusterHealth is the state of one cluster's subscription.
type ClusterHealth struct {
	Cluster string
	// Connected is false while the cluster's last probe failed or a probe
	// has been unanswered for longer than ProbeInterval.
	Connected bool
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
	// topology gives no admin URL or the call failed (BacklogErr).
	Backlog    int64
	BacklogErr error
	// The hand-over of moving keys (router/HANDOVER.md): Held is how many
	// of the cluster's messages are held now, HeldTotal how many were
	// ever held; Markers counts the markers taken (never delivered,
	// acknowledged once within their partition's delivered frontier);
	// ForcedReleases counts the messages delivered before an origin they
	// owed passed (HoldTimeout, MaxHeld, an origin on a cluster not read);
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

// Health returns the state of every cluster, in topology order. It asks
// the admin API of each cluster that has one for the backlog, in
// parallel, bounded by ctx; the rest is read from counters. After Close
// the counts are final (Connected is the last probe's answer) and the
// backlog is not asked for (BacklogErr matches ErrClosed).
func (c *Consumer) Health(ctx context.Context) []ClusterHealth {
	if c == nil {
		return nil
	}
	out := make([]ClusterHealth, len(c.clusters))
	var wg sync.WaitGroup
	for i, k := range c.clusters {
		h := &out[i]
		*h = ClusterHealth{
			Cluster: k.name, Connected: k.connected(c.cfg.probeEvery),
			Delivered: k.delivered.Load(), Acked: k.acked.Load(), Nacked: k.nacked.Load(),
			Redelivered: k.redelivered.Load(), Lag: since(k.lastPublish.Load()), Backlog: -1,
		}
		k.hold.health(h)
		if k.admin == nil {
			continue
		}
		if c.closed.Load() {
			h.BacklogErr = clusterErr(k.name, "backlog", ErrClosed)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := k.admin.backlog(ctx, c.cfg.topic, c.cfg.subscription, k.link.partitioned)
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

func (k *cluster) connected(interval time.Duration) bool {
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
		for _, k := range c.clusters {
			if k.link.probe == nil || k.probeStart.Load() != 0 {
				continue
			}
			k.probeStart.Store(time.Now().UnixNano())
			c.probes.Add(1)
			go func() {
				defer c.probes.Done()
				err := k.link.probe()
				k.probeOK.Store(err == nil)
				k.probeStart.Store(0)
			}()
		}
	}
}
