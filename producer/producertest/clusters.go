package producertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/internal/hook"
	"github.com/keyroute/keyroute/topology"
)

// Clusters is a set of fake Pulsar clusters, each holding the topic in
// some number of partitions. A cluster comes into being when it is first
// named: by Cluster, or when a Producer connects to it.
type Clusters struct {
	opt options // fixed by New

	// mu guards everything below, and every field of the Clusters'
	// Cluster, Partition, writer, client and txn values marked as such.
	mu       sync.Mutex
	clusters map[string]*Cluster
	events   []Event
	txns     uint64 // transactions begun
}

// options are the settings of a Clusters.
type options struct {
	parts     int            // partitions of a cluster not in byCluster
	byCluster map[string]int // partitions, by cluster
	forget    bool           // KeepMessages(false)
	batch     int            // AsyncAcks; 0: acknowledge at once
}

// Option configures a Clusters.
type Option func(*options)

// Partitions gives the named clusters, or every cluster when none is
// named, n partitions (default 1). A cluster with n < 1 has a topic without
// partitions: connecting to it fails.
func Partitions(n int, clusters ...string) Option {
	return func(o *options) {
		if len(clusters) == 0 {
			o.parts = n
		}
		for _, c := range clusters {
			o.byCluster[c] = n
		}
	}
}

// KeepMessages says whether the fake keeps what it is sent (default true).
// Without, it keeps no Message and no message Event (OpSend to OpFail),
// for long runs and benchmarks; the transaction Events are still kept.
func KeepMessages(on bool) Option { return func(o *options) { o.forget = !on } }

// AsyncAcks makes each partition writer acknowledge on a goroutine of its
// own, as pulsar-client-go's connection goroutine does, in batches of
// batch messages: a batch is acknowledged once it is full, or at a flush,
// as pulsar-client-go sends them with BatchingMaxMessages(batch) and an
// endless linger. A message in a batch that is not full waits for a
// flush (Producer.Flush and Close flush; so does Send, unless the
// Producer has Batching(false)): AsyncAcks(1) acknowledges every message
// on its own. The goroutine ends when its writer closes. Without
// AsyncAcks (or with batch < 1), a message is acknowledged inside
// SendAsync, on the sender's goroutine, as a batch of one.
func AsyncAcks(batch int) Option { return func(o *options) { o.batch = max(batch, 0) } }

// New returns a set of fake clusters.
func New(opts ...Option) *Clusters {
	o := options{parts: 1, byCluster: map[string]int{}}
	for _, fn := range opts {
		fn(&o)
	}
	return &Clusters{opt: o, clusters: map[string]*Cluster{}}
}

// Opt is the producer option that makes producer.New open the clusters of
// its topology as fakes of cs, by name, instead of connecting to Pulsar.
// Any number of Producers may use cs, one after the other or at once.
func (cs *Clusters) Opt() producer.Opt {
	return hook.Opt(cs.connect).(producer.Opt)
}

// Topology returns a valid topology of the named clusters, each of weight
// 1, with service URLs that no broker answers (the fake never dials them).
func Topology(clusters ...string) *topology.Topology {
	t := &topology.Topology{}
	for i, name := range clusters {
		t.Clusters = append(t.Clusters, topology.Cluster{
			Name:       name,
			ServiceURL: fmt.Sprintf("pulsar://cluster-%d.producertest.invalid:6650", i),
			Weight:     1,
		})
	}
	return t
}

// Cluster returns the named cluster, which it makes if it does not exist.
func (cs *Clusters) Cluster(name string) *Cluster {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.clusterLocked(name)
}

func (cs *Clusters) clusterLocked(name string) *Cluster {
	if c := cs.clusters[name]; c != nil {
		return c
	}
	n, ok := cs.opt.byCluster[name]
	if !ok {
		n = cs.opt.parts
	}
	c := &Cluster{cs: cs, name: name}
	for i := range max(n, 0) {
		c.parts = append(c.parts, &Partition{c: c, idx: i})
	}
	cs.clusters[name] = c
	return c
}

// locked runs fn with cs.mu held.
func (cs *Clusters) locked(fn func()) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	fn()
}

// Events returns what happened on every cluster, in the order it
// happened.
func (cs *Clusters) Events() []Event {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]Event(nil), cs.events...)
}

// errNoPartitions is the connect error of a cluster without partitions.
var errNoPartitions = errors.New("producertest: the topic has no partitions")

// connect opens a client on the named cluster with a writer per
// partition.
func (cs *Clusters) connect(ctx context.Context, name string) (*hook.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.clusterLocked(name)
	for c.blackHole != nil {
		hole := c.blackHole
		c.waiting++
		cs.mu.Unlock()
		select {
		case <-hole:
		case <-ctx.Done():
		}
		cs.mu.Lock()
		c.waiting--
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	switch {
	case c.connectErr != nil:
		return nil, c.connectErr
	case len(c.parts) == 0:
		return nil, errNoPartitions
	}
	cl := &client{c: c, n: c.connects + 1, gone: make(chan struct{})}
	conn := &hook.Conn{Writers: make([]hook.Writer, len(c.parts)), Probe: c.probe, Close: cl.close}
	for i, p := range c.parts {
		conn.Writers[i] = p.open(cl, false)
	}
	conn.Partitions = func() (n int, err error) {
		cs.locked(func() {
			n = len(c.parts)
			if c.reported > 0 {
				n = c.reported
			}
		})
		return n, nil
	}
	conn.OpenPartitions = func(from int) ([]hook.Writer, error) {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if from > len(c.parts) {
			return nil, fmt.Errorf("producertest: %d partitions, fewer than %d", len(c.parts), from)
		}
		var ws []hook.Writer
		for _, p := range c.parts[from:] {
			ws = append(ws, p.open(cl, false))
		}
		return ws, nil
	}
	if !c.noTxn {
		conn.NewTxn = func(time.Duration) (pulsar.Transaction, error) { return cl.begin() }
		conn.BulkWriters = func() ([]hook.Writer, error) {
			cs.mu.Lock()
			defer cs.mu.Unlock()
			ws := make([]hook.Writer, len(c.parts))
			for i, p := range c.parts {
				ws[i] = p.open(cl, true)
			}
			return ws, nil
		}
	}
	c.connects++
	return conn, nil
}

// client is one connection to a cluster.
type client struct {
	c    *Cluster
	n    int           // 1 for the cluster's first connection, 2 for the next, ... (Event.Conn)
	gone chan struct{} // closed when the client closes
}

func (cl *client) close() { close(cl.gone) }

// closed reports whether cl is closed.
func (cl *client) closed() bool {
	select {
	case <-cl.gone:
		return true
	default:
		return false
	}
}
