package consumertest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/consumer/internal/hook"
	"github.com/keyroute/keyroute/topology"
)

// Clusters is a set of fake Pulsar clusters, each holding the topic in
// some number of partitions. A cluster comes into being when it is first
// named: by Cluster, or when a Consumer subscribes to it.
type Clusters struct {
	opt options // fixed by New

	// mu guards everything below and every field of the Clusters'
	// Cluster, subscription and stream values marked as such.
	mu       sync.Mutex
	clusters map[string]*Cluster
	events   []Event
}

type options struct {
	parts     int            // partitions of a cluster not in byCluster
	byCluster map[string]int // partitions, by cluster
}

// Option configures a Clusters.
type Option func(*options)

// Partitions gives the named clusters, or every cluster when none is
// named, n partitions (default 1; at least 1).
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

// New returns a set of fake clusters.
func New(opts ...Option) *Clusters {
	o := options{parts: 1, byCluster: map[string]int{}}
	for _, fn := range opts {
		fn(&o)
	}
	return &Clusters{opt: o, clusters: map[string]*Cluster{}}
}

// Opt is the consumer option that makes consumer.New subscribe on the
// clusters of its topology as fakes of cs, by name, instead of connecting
// to Pulsar. Any number of Consumers may use cs, one after the other or at
// once (one at a time per subscription and cluster).
func (cs *Clusters) Opt() consumer.Opt {
	return hook.Opt(cs.connect, positions{cs}).(consumer.Opt)
}

// Topology returns a valid topology of the named clusters, each of weight
// 1, with service URLs that no broker answers (the fake never dials them).
func Topology(clusters ...string) *topology.Topology {
	t := &topology.Topology{}
	for i, name := range clusters {
		t.Clusters = append(t.Clusters, topology.Cluster{
			Name:       name,
			ServiceURL: fmt.Sprintf("pulsar://cluster-%d.consumertest.invalid:6650", i),
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
	c := &Cluster{cs: cs, name: name, logs: make([][]*stored, max(n, 1)), subs: map[string]*subscription{}}
	cs.clusters[name] = c
	return c
}

// Events returns what consumers did on every cluster (acknowledgements,
// nacks, seeks, resets, subscribing and closing), in the order they did
// it.
func (cs *Clusters) Events() []Event {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]Event(nil), cs.events...)
}

// Op is what an Event records.
type Op string

// Ops of Events.
const (
	OpSubscribe     Op = "subscribe"
	OpAck           Op = "ack"
	OpAckCumulative Op = "ack-cumulative"
	OpNack          Op = "nack"
	OpSeek          Op = "seek"
	OpClose         Op = "close"
	// OpReset is a subscription's cursor moved just after a message
	// (consumer.StartAfter, Consumer.SeekByID), as the admin API's
	// resetcursor moves a real one.
	OpReset Op = "reset"
)

// Event is one thing a consumer did on a cluster. Partition and Entry
// name the message for acknowledgements, nacks and resets (-1
// otherwise); Time is a seek's time.
type Event struct {
	Op           Op
	Cluster      string
	Subscription string
	Partition    int
	Entry        int64
	Time         time.Time
}

func (e Event) String() string {
	switch e.Op {
	case OpAck, OpAckCumulative, OpNack, OpReset:
		return fmt.Sprintf("%s %s/%d:%d %s", e.Op, e.Cluster, e.Partition, e.Entry, e.Subscription)
	case OpSeek:
		return fmt.Sprintf("%s %s %s to %s", e.Op, e.Cluster, e.Subscription, e.Time.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("%s %s %s", e.Op, e.Cluster, e.Subscription)
}

// record appends an event; cs.mu is held.
func (cs *Clusters) record(e Event) { cs.events = append(cs.events, e) }

// connect subscribes on a cluster for a Consumer.
func (cs *Clusters) connect(ctx context.Context, sub hook.Sub) (*hook.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.clusterLocked(sub.Cluster)
	if c.connectErr != nil {
		return nil, c.connectErr
	}
	s := c.subs[sub.Subscription]
	if s == nil {
		s = c.newSubscription(sub.Subscription)
	}
	if s.open != nil {
		return nil, fmt.Errorf("%w: %q on %q", ErrBusy, sub.Subscription, c.name)
	}
	s.start(c, sub.Earliest)
	st := newStream(c, s, sub.Topic, max(sub.Queue, 1))
	s.open = st
	cs.record(Event{Op: OpSubscribe, Cluster: c.name, Subscription: s.name, Partition: -1, Entry: -1})
	go st.dispatch()
	name := s.name
	return &hook.Conn{Stream: st, Probe: c.probe, Backlog: func() (int64, error) { return int64(c.Backlog(name)), nil }}, nil
}

// newID is the ID of entry e of partition p.
func newID(p int, e int64) pulsar.MessageID { return pulsar.NewMessageID(1, e, -1, int32(p)) }
