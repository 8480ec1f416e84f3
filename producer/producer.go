package producer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// keylessRun is how many consecutive keyless messages go to one partition
// before the next placement, so that they still fill batches.
const keylessRun = 64

// Producer sends messages to the clusters of a topology. It is safe for
// concurrent use.
type Producer struct {
	cfg      cfg
	router   *router.Router
	clusters []*cluster // in topology order, as router indexes them

	keyless atomic.Uint64 // keyless messages handed over

	// Close protocol: every call that touches the writers counts itself in
	// active and then checks closed; Close sets closed, closes done (which
	// wakes callers waiting for buffer space) and waits for active to drain
	// before it touches the writers. So no writer is used after it closes.
	active    atomic.Int64
	closed    atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	monStop, monDone chan struct{} // the health monitor goroutine
}

// New validates the topology and options, connects to every cluster and
// opens a writer on every partition of the topic there. ctx bounds the
// connecting; pulsar-client-go's own calls are bounded by each cluster's
// operation timeout. If any cluster cannot be opened, New closes the others
// and returns an error naming each failed cluster (*ClusterError, ErrConnect).
func New(ctx context.Context, topo *topology.Topology, opts ...Opt) (*Producer, error) {
	c := defaultCfg()
	for _, o := range opts {
		o.apply(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if topo == nil {
		return nil, fmt.Errorf("%w: nil topology", ErrBadTopology)
	}
	if err := topo.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	members := make([]router.Member, len(topo.Clusters))
	var weightSum float64
	for i, cl := range topo.Clusters {
		members[i] = router.Member{Name: cl.Name, Weight: cl.Weight}
		weightSum += cl.Weight
	}
	r, err := router.New(members)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTopology, err)
	}

	p := &Producer{cfg: c, router: r, done: make(chan struct{})}
	p.clusters = make([]*cluster, len(topo.Clusters))
	links := make([]*link, len(topo.Clusters))
	errs := make([]error, len(topo.Clusters))
	var wg sync.WaitGroup
	for i, cl := range topo.Clusters {
		share := cl.Weight / weightSum
		maxMsgs := int64(max(1, math.Round(float64(c.maxPending)*share)))
		maxBytes := int64(max(1, math.Round(float64(c.memoryLimit)*share)))
		p.clusters[i] = &cluster{name: cl.Name, url: cl.ServiceURL, obs: c.observer,
			budget: newBudget(maxMsgs, maxBytes), health: newHealth(time.Now())}
		wc := writerConfig{
			topic:            c.topic,
			batching:         c.batching,
			batchMaxMessages: c.batchMaxMessages,
			batchMaxBytes:    c.batchMaxBytes,
			linger:           int64(c.linger),
			codec:            c.codec,
			maxPending:       int(maxMsgs),
			memoryLimit:      maxBytes,
			sendTimeout:      int64(c.sendTimeout),
			logger:           c.logger,
			transactions:     c.transactions,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.connect.connect(ctx, cl, wc)
			if err == nil && len(l.writers) == 0 {
				l.close()
				err = errNoWriters
			}
			if err != nil {
				errs[i] = &ClusterError{Cluster: cl.Name, Op: "connect", Err: errors.Join(ErrConnect, err)}
				return
			}
			links[i] = l
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		p.log().Error("keyroute: connect failed", "error", err)
		for _, l := range links {
			if l != nil {
				closeWriters(l.writers)
				l.close()
			}
		}
		return nil, err
	}
	for i, cl := range p.clusters {
		cl.link = links[i]
		cl.parts = make([]*partition, len(links[i].writers))
		for j, w := range links[i].writers {
			cl.parts[j] = &partition{idx: j, w: w}
		}
		cl.disp = newDispatcher(cl)
		cl.onAck = cl.ack
		p.log().Info("keyroute: cluster connected", "cluster", cl.name, "topic", c.topic, "partitions", len(cl.parts))
	}
	p.monStop, p.monDone = make(chan struct{}), make(chan struct{})
	go p.monitor(p.monStop, p.monDone)
	return p, nil
}

// Clusters returns the cluster names in topology order.
func (p *Producer) Clusters() []string {
	names := make([]string, len(p.clusters))
	for i, c := range p.clusters {
		names[i] = c.name
	}
	return names
}

// Placement returns the cluster and partition that messages with key go to.
// It is meaningless for the empty key (keyless messages are spread).
func (p *Producer) Placement(key string) (cluster string, partition int) {
	h := router.Hash(key)
	c := p.clusters[p.router.Cluster(h)]
	return c.name, router.Partition(h, len(c.parts))
}

// Partitions returns the partition count of the topic on each cluster, in
// topology order.
func (p *Producer) Partitions() []int {
	n := make([]int, len(p.clusters))
	for i, c := range p.clusters {
		n[i] = len(c.parts)
	}
	return n
}

// route returns key's own cluster and partition, whatever their health.
func (p *Producer) route(key string) (*cluster, *partition) {
	c, pt, _ := p.place(key)
	return c, pt
}

// place is route that also returns the key hash.
func (p *Producer) place(key string) (*cluster, *partition, uint64) {
	var h uint64
	if key == "" {
		h = router.KeylessHash(p.keyless.Add(1) / keylessRun)
	} else {
		h = router.Hash(key)
	}
	c := p.clusters[p.router.Cluster(h)]
	return c, c.parts[router.Partition(h, len(c.parts))], h
}

// pick is where a message with key goes now: its own cluster and
// partition, or while that cluster is down, what the down policy says (see
// admit). On error it returns the key's own cluster and partition, for the
// error to name.
func (p *Producer) pick(ctx context.Context, key string) (*cluster, *partition, error) {
	c, pt, h := p.place(key)
	if err := ctx.Err(); err != nil {
		return c, pt, err
	}
	if !c.health.down.Load() {
		return c, pt, nil
	}
	alt, err := p.admit(ctx, c, h, key == "")
	if err != nil {
		return c, pt, err
	}
	if alt != c {
		pt = alt.parts[router.Partition(h, len(alt.parts))]
	}
	return alt, pt, nil
}

// enter counts a call that will touch the writers; it reports false (and
// counts nothing) once the Producer is closing.
func (p *Producer) enter() bool {
	p.active.Add(1)
	if p.closed.Load() {
		p.active.Add(-1)
		return false
	}
	return true
}

func (p *Producer) leave() { p.active.Add(-1) }

// Close stops accepting messages, flushes what was accepted (bounded by
// ctx), closes the writers and connections, and reports an outcome for
// every message: those not acknowledged by then fail with ErrClosed. It
// waits for calls already in progress to leave (a Send in progress returns
// at its ack, its send timeout or its ctx) and for every callback to return.
// Close returns the flush errors, if any; later calls return the same.
func (p *Producer) Close(ctx context.Context) error {
	p.closeOnce.Do(func() { p.closeErr = p.close(ctx) })
	return p.closeErr
}

func (p *Producer) close(ctx context.Context) error {
	p.closed.Store(true)
	close(p.done)
	for p.active.Load() != 0 {
		time.Sleep(200 * time.Microsecond)
	}
	flushErr := p.flushWriters(ctx)
	var wg sync.WaitGroup
	for _, c := range p.clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			closeWriters(c.link.writers)
			if n := c.sweep(ErrClosed); n > 0 {
				p.log().Warn("keyroute: messages failed at close", "cluster", c.name, "messages", n)
			}
			c.disp.close()
			c.link.close()
		}()
	}
	wg.Wait()
	close(p.monStop)
	<-p.monDone
	if flushErr != nil {
		p.log().Warn("keyroute: close could not flush everything", "error", flushErr)
	}
	return flushErr
}

// log returns the configured logger, or one that discards.
func (p *Producer) log() *slog.Logger {
	if p.cfg.logger != nil {
		return p.cfg.logger
	}
	return discard
}

var discard = slog.New(slog.DiscardHandler)

// closeWriters closes writers in parallel: each close is a broker round trip.
func closeWriters(ws []writer) {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Close()
		}()
	}
	wg.Wait()
}
