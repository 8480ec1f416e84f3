package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/topology"
)

// Consumer reads one subscription of a topic on every cluster of a
// topology as one stream. It is safe for concurrent use.
type Consumer struct {
	cfg      cfg
	clusters []*cluster // in topology order; clusters[i].idx == i
	byName   map[string]*cluster

	// rotor is the index of the cluster a take tries first: the one after
	// the cluster of the last message taken, so that the clusters that
	// have messages take turns (a busy cluster cannot starve the others).
	rotor atomic.Uint32
	// slab is where Receive carves its Messages from (see carve).
	slab atomic.Pointer[slab]

	// gate orders takes against SeekByTime: a take holds it shared
	// (RLock) from reading the state until the message is out of the
	// clusters' channels; a seek holds it alone while pulsar-client-go
	// seeks. state is the seek state, read under the gate (see pause).
	gate  sync.RWMutex
	state atomic.Pointer[pause]

	// out is Chan's channel, made on the first Chan call and fed by a
	// goroutine of its own (feed); nil until then. Guarded by mu.
	out chan *Message

	closing   chan struct{} // closed when Close begins
	closeDone chan struct{} // closed when Close's closing has ended
	closed    atomic.Bool
	closeOnce sync.Once
	bg        sync.WaitGroup // the monitor and feed
	probes    sync.WaitGroup // probes in flight
	acks      sync.WaitGroup // acks waited for on goroutines of their own (ackUntil)
	mu        sync.Mutex     // orders acks.Add and bg.Add (feed) before Close's waits; guards out
	seekMu    sync.Mutex     // one SeekByTime at a time
	detach    func()         // from the shared clients (WithClients); nil without
	hold      holder         // the hand-over's holds (hold.go)
}

// cluster is the Consumer's state for one cluster.
type cluster struct {
	name  string
	idx   uint32 // in Consumer.clusters
	owner *Consumer
	admin *admin // the admin API; nil when the topology gives none
	link  *link
	in    <-chan pulsar.ConsumerMessage // link.stream.Chan()

	delivered   atomic.Uint64 // handed to the caller
	acked       atomic.Uint64
	nacked      atomic.Uint64
	redelivered atomic.Uint64 // delivered with a RedeliveryCount above 0
	lastPublish atomic.Int64  // unix ns of the last delivered message's publish time

	// Probes, written by the monitor and its probe goroutines.
	probeOK    atomic.Bool
	probeStart atomic.Int64 // unix ns of the probe in flight, 0 when none

	hold clusterHold // the hand-over's frontiers and counters (hold.go)
}

// New validates the topology and options and subscribes on every cluster
// (on every partition of the topic there), in parallel. ctx bounds the
// subscribing; pulsar-client-go's own calls are bounded by each cluster's
// operation timeout. If any cluster cannot be subscribed, New closes the
// others and returns the errors of every failed cluster
// (*ClusterError, joined).
func New(ctx context.Context, topo *topology.Topology, opts ...Opt) (*Consumer, error) {
	c := defaultCfg()
	for _, o := range opts {
		o.apply(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := topo.Validate(); err != nil { // a nil topo has no clusters
		return nil, fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	if c.clients != nil {
		if err := c.clients.Check(topo); err != nil {
			return nil, err
		}
	}
	n := len(topo.Clusters)
	links := make([]*link, n)
	admins := make([]*admin, n)
	errs := make([]error, n)
	for i, cl := range topo.Clusters {
		if admins[i], errs[i] = newAdmin(cl); errs[i] != nil {
			return nil, clusterErr(cl.Name, "admin", errs[i])
		}
	}
	var wg sync.WaitGroup
	for i, cl := range topo.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			links[i], errs[i] = c.connect.connect(ctx, cl, subConfig{cfg: c, cluster: cl.Name, share: max(1, c.maxBuffered/n), admin: admins[i]})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for i, l := range links {
			if l != nil {
				l.stream.Close()
				l.close()
			}
			admins[i].close()
		}
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return nil, err
	}
	co := &Consumer{cfg: c, byName: make(map[string]*cluster, n), closing: make(chan struct{}), closeDone: make(chan struct{})}
	co.state.Store(&pause{begin: make(chan struct{})})
	for i, cl := range topo.Clusters {
		k := &cluster{name: cl.Name, idx: uint32(i), owner: co, admin: admins[i], link: links[i], in: links[i].stream.Chan()}
		k.probeOK.Store(true)
		co.clusters = append(co.clusters, k)
		co.byName[cl.Name] = k
	}
	co.hold.init(co)
	if c.clients != nil {
		detach, err := c.clients.Attach(func() { _ = co.Close(context.Background()) })
		if err != nil {
			co.closeLinks()
			return nil, err
		}
		co.detach = detach
	}
	co.bg.Add(1)
	go co.monitor()
	return co, nil
}

// Topic returns the topic the Consumer reads.
func (c *Consumer) Topic() string { return c.cfg.topic }

// Subscription returns the subscription name.
func (c *Consumer) Subscription() string { return c.cfg.subscription }

// Close stops the stream (Receive and ReceiveBatch return ErrClosed, Chan
// is closed), then closes every cluster's pulsar-client-go consumer, which
// sends the acknowledgements still grouped, and client. Messages received
// from the brokers but not taken are not acknowledged: they come again to
// the subscription. ctx bounds the wait for the clusters: a consumer of an
// unreachable cluster takes up to that cluster's operation timeout to
// close, and so may a probe or an AckWithResponse in flight. When ctx ends
// first, Close returns an error matching ctx.Err() and the closing goes
// on in the background (its grouped acknowledgements may not be sent yet);
// a later Close waits for it again. Otherwise Close returns nil once every
// goroutine the Consumer started has ended. Calls other than Close and
// Health after Close return ErrClosed.
func (c *Consumer) Close(ctx context.Context) error {
	if c == nil {
		return ErrClosed
	}
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed.Store(true)
		if c.out == nil { // Chan never called: it returns a closed channel
			c.out = make(chan *Message)
			close(c.out)
		}
		c.mu.Unlock()
		close(c.closing)
		c.bg.Wait() // the monitor and Chan's goroutine end at once
		go func() {
			defer close(c.closeDone)
			c.closeLinks()
			c.probes.Wait()
			c.acks.Wait()
			if c.detach != nil {
				c.detach()
			}
		}()
	})
	select {
	case <-c.closeDone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("consumer: Close: the clusters' consumers are still closing: %w", ctx.Err())
	}
}

// closeLinks closes every cluster's consumer, then its client (when the
// Consumer opened it), in parallel.
func (c *Consumer) closeLinks() {
	var wg sync.WaitGroup
	for _, k := range c.clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.link.stream.Close()
			k.link.close()
			k.admin.close()
		}()
	}
	wg.Wait()
}

// since returns the time from unix ns t to now, 0 for t = 0.
func since(t int64) time.Duration {
	if t == 0 {
		return 0
	}
	return time.Since(time.Unix(0, t))
}
