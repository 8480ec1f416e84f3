package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyroute/keyroute/topology"
)

// Consumer reads one subscription of a topic on every cluster of a
// topology as one stream. It is safe for concurrent use.
type Consumer struct {
	cfg      cfg
	clusters []*cluster // in topology order
	byName   map[string]*cluster

	// out is the merged stream: unbuffered, so a message is either in a
	// cluster's pump or taken by the caller, never in between (SeekByTime
	// relies on that), and the pumps blocked on it take turns in the order
	// they blocked (the Go runtime queues blocked senders first in, first
	// out), which is what keeps a busy cluster from starving the others.
	// It is closed once every pump has stopped.
	out chan *Message

	closing   chan struct{} // closed when Close begins
	closed    atomic.Bool
	closeOnce sync.Once
	pumps     sync.WaitGroup // the pumps and the monitor
	probes    sync.WaitGroup // probes in flight
	acks      sync.WaitGroup // acks waited for on goroutines of their own (ackUntil)
	ackMu     sync.Mutex     // orders acks.Add before Close's acks.Wait
	seekMu    sync.Mutex     // one SeekByTime at a time
	detach    func()         // from the shared clients (WithClients); nil without
}

// cluster is the Consumer's state for one cluster.
type cluster struct {
	name  string
	admin *admin // the admin API; nil when the topology gives none
	link  *link

	// pause takes a SeekByTime's resume channel: the pump drops the
	// message it holds (read before the seek) and waits until resume is
	// closed.
	pause chan chan struct{}

	delivered   atomic.Uint64 // taken by the caller
	acked       atomic.Uint64
	nacked      atomic.Uint64
	redelivered atomic.Uint64 // delivered with a RedeliveryCount above 0
	lastPublish atomic.Int64  // unix ns of the last delivered message's publish time

	// Probes, written by the monitor and its probe goroutines.
	probeOK    atomic.Bool
	probeStart atomic.Int64 // unix ns of the probe in flight, 0 when none
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
			links[i], errs[i] = c.connect.connect(ctx, cl, subConfig{cfg: c, share: max(1, c.maxBuffered/n), admin: admins[i]})
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
	co := &Consumer{cfg: c, byName: make(map[string]*cluster, n), out: make(chan *Message), closing: make(chan struct{})}
	for i, cl := range topo.Clusters {
		k := &cluster{name: cl.Name, admin: admins[i], link: links[i], pause: make(chan chan struct{})}
		k.probeOK.Store(true)
		co.clusters = append(co.clusters, k)
		co.byName[cl.Name] = k
	}
	if c.clients != nil {
		detach, err := c.clients.Attach(func() { _ = co.Close() })
		if err != nil {
			co.closeLinks()
			return nil, err
		}
		co.detach = detach
	}
	co.pumps.Add(len(co.clusters) + 1)
	for _, k := range co.clusters {
		go co.pump(k)
	}
	go co.monitor()
	go func() {
		co.pumps.Wait()
		close(co.out)
	}()
	return co, nil
}

// Receive returns the next message of the merged stream. It blocks until
// one comes, ctx ends (the error matches ctx.Err()) or the Consumer is
// closed (ErrClosed).
func (c *Consumer) Receive(ctx context.Context) (*Message, error) {
	if c == nil {
		return nil, ErrClosed
	}
	select {
	case m, ok := <-c.out:
		if !ok {
			return nil, ErrClosed
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Chan returns the merged stream as a channel, the same one Receive reads:
// each message goes to exactly one of them. It is closed after Close.
func (c *Consumer) Chan() <-chan *Message { return c.out }

// Topic returns the topic the Consumer reads.
func (c *Consumer) Topic() string { return c.cfg.topic }

// Subscription returns the subscription name.
func (c *Consumer) Subscription() string { return c.cfg.subscription }

// Close stops the stream (Receive returns ErrClosed, Chan is closed), then
// closes every cluster's pulsar-client-go consumer, which sends the
// acknowledgements still grouped, and client. Messages received from the
// brokers but not taken are not acknowledged: they come again to the
// subscription. Close waits for every goroutine the Consumer started; a
// probe in flight against an unreachable cluster can hold it up to that
// cluster's operation timeout. Calls after Close return ErrClosed.
func (c *Consumer) Close() error {
	if c == nil {
		return ErrClosed
	}
	c.closeOnce.Do(func() {
		c.ackMu.Lock()
		c.closed.Store(true)
		c.ackMu.Unlock()
		close(c.closing)
		c.pumps.Wait()
		c.closeLinks()
		c.probes.Wait()
		c.acks.Wait()
		if c.detach != nil {
			c.detach()
		}
	})
	return nil
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
