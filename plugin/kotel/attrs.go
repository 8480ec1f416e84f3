package kotel

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/keyroute/keyroute/producer"
)

// ClusterKey is the attribute that names the keyroute cluster a message was
// routed to.
const ClusterKey = attribute.Key("keyroute.cluster")

// destKey identifies one destination: a partition of a topic in a cluster,
// for one kind of send.
type destKey struct {
	topic, cluster, url string
	partition           int
	op                  producer.Op
}

// hashKey is the part of a destKey the cache hashes: hashing the topic and
// the service URL too cost more than the rest of a lookup, and they seldom
// vary among the destinations of one hashKey. Strings compare cheaply where
// hashing does not: the producer passes the same strings every time, and
// == returns at once on the same pointer.
type hashKey struct {
	cluster   string
	partition int
	op        producer.Op
}

// dest holds everything about a destination that does not change from
// message to message, built once so that the hot path only looks it up.
// Its fields are immutable after newDest, except errs.
type dest struct {
	key       destKey
	spanName  string
	startOpts []trace.SpanStartOption
	recOpts   []metric.RecordOption
	attrs     []attribute.KeyValue // the span's and the metrics' attributes
	sent      *counter             // messages written

	c    *cache   // the cache holding d, for the failures' counters
	errs sync.Map // error.type string -> *failure; bounded by the error types seen
}

// failure holds a destination's measurement options for one error.type.
type failure struct {
	attrs   []attribute.KeyValue // the span's attributes, error.type last
	recOpts []metric.RecordOption
	sent    *counter // messages failed with this error.type
}

// counter counts messages for one attribute set; the Observer reports it
// as messaging.client.sent.messages when the metrics are collected, so a
// message costs an atomic add instead of a synchronous Add (which
// re-checks every attribute on every call).
type counter struct {
	n    atomic.Int64
	opts []metric.ObserveOption
	h    *hist // the set's durations, WithDurations; else nil
}

func (c *cache) newDest(k destKey) *dest {
	host, port := serverAddr(k.url)
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemPulsar,
		semconv.MessagingOperationName(k.op.String()),
		semconv.MessagingOperationTypeSend,
		semconv.MessagingDestinationName(k.topic),
		semconv.MessagingDestinationPartitionID(strconv.Itoa(k.partition)),
		semconv.ServerAddress(host),
		semconv.ServerPort(port),
		ClusterKey.String(k.cluster),
	}
	set := attribute.NewSet(attrs...)
	return &dest{
		key:      k,
		spanName: "send " + k.topic,
		// The attributes are set on the span in OnDone, in one call with
		// the outcome's: the SDK copies start attributes into the config,
		// then into the span, then grows that slice again for any later
		// attribute, which more than doubled its allocations per span.
		startOpts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)},
		recOpts:   []metric.RecordOption{metric.WithAttributeSet(set)},
		attrs:     attrs,
		sent:      c.counter(set),
		c:         c,
	}
}

// failure returns the options for messages that failed with errType.
func (d *dest) failure(errType string) *failure {
	if f, ok := d.errs.Load(errType); ok {
		return f.(*failure)
	}
	all := make([]attribute.KeyValue, 0, len(d.attrs)+1)
	all = append(append(all, d.attrs...), semconv.ErrorTypeKey.String(errType))
	set := attribute.NewSet(all...)
	f, _ := d.errs.LoadOrStore(errType, &failure{attrs: all, recOpts: []metric.RecordOption{metric.WithAttributeSet(set)}, sent: d.c.counter(set)})
	return f.(*failure)
}

// cache maps destinations to their prebuilt attributes and attribute sets
// to their counters. Reads of m are lock free: the map behind m, and the
// slices in it, are never modified once stored; writers copy them under
// mu. Both grow with the destinations seen (topics x clusters x partitions
// x 2, times the error types seen) and never shrink.
type cache struct {
	mu       sync.Mutex // serializes writers of m and groups
	m        atomic.Pointer[map[hashKey][]*dest]
	groups   atomic.Pointer[[]*group] // the first maxGroups groups, for get
	counters sync.Map                 // attribute.Distinct -> *counter
	durs     *Durations               // set by New from WithDurations; nil without
}

// group indexes the destinations of one topic in one cluster (one
// service URL) by kind of send and partition: get finds a message's
// destination with a few string comparisons that return at once (the
// producer passes the same strings every time) and two index reads, where
// the map hashes the cluster name (about 50 ns a message). Immutable once
// stored; add stores a copy with the new destination.
type group struct {
	topic, cluster, url string
	dests               [opCount][]*dest // by Op, then partition; nil: not seen yet
}

// opCount bounds the Ops a group indexes, maxParts its partitions;
// maxGroups is how many groups get scans before it falls back to the map.
const (
	opCount   = 3
	maxParts  = 1 << 12
	maxGroups = 16
)

func (c *cache) get(ev *producer.Event) *dest {
	if gs := c.groups.Load(); gs != nil && int(ev.Op) < opCount && ev.Partition >= 0 {
		for _, g := range *gs {
			if g.cluster == ev.Cluster && g.topic == ev.Topic && g.url == ev.ServiceURL {
				if ds := g.dests[ev.Op]; ev.Partition < len(ds) && ds[ev.Partition] != nil {
					return ds[ev.Partition]
				}
				break
			}
		}
	}
	if m := c.m.Load(); m != nil {
		if d := find((*m)[hashKey{cluster: ev.Cluster, partition: ev.Partition, op: ev.Op}], ev); d != nil {
			return d
		}
	}
	return c.add(ev)
}

// find returns the destination of ev among ds (those of one hashKey), or
// nil.
func find(ds []*dest, ev *producer.Event) *dest {
	for _, d := range ds {
		if d.key.topic == ev.Topic && d.key.url == ev.ServiceURL {
			return d
		}
	}
	return nil
}

func (c *cache) add(ev *producer.Event) *dest {
	c.mu.Lock()
	defer c.mu.Unlock()
	sk := hashKey{cluster: ev.Cluster, partition: ev.Partition, op: ev.Op}
	var old map[hashKey][]*dest
	if m := c.m.Load(); m != nil {
		old = *m
		if d := find(old[sk], ev); d != nil {
			return d
		}
	}
	next := make(map[hashKey][]*dest, len(old)+1)
	for k, ds := range old {
		next[k] = ds
	}
	d := c.newDest(destKey{topic: ev.Topic, cluster: ev.Cluster, url: ev.ServiceURL, partition: ev.Partition, op: ev.Op})
	next[sk] = append(slices.Clip(old[sk]), d)
	c.m.Store(&next)
	c.index(d)
	return d
}

// index adds d to its group, when the group is or can be among the first
// maxGroups. Called with mu held.
func (c *cache) index(d *dest) {
	k := d.key
	if int(k.op) >= opCount || k.partition < 0 || k.partition >= maxParts {
		return
	}
	var gs []*group
	if p := c.groups.Load(); p != nil {
		gs = *p
	}
	i := slices.IndexFunc(gs, func(g *group) bool { return g.cluster == k.cluster && g.topic == k.topic && g.url == k.url })
	var g group
	switch {
	case i >= 0:
		g = *gs[i]
	case len(gs) < maxGroups:
		g = group{topic: k.topic, cluster: k.cluster, url: k.url}
	default:
		return
	}
	ds := make([]*dest, max(len(g.dests[k.op]), k.partition+1))
	copy(ds, g.dests[k.op])
	ds[k.partition] = d
	g.dests[k.op] = ds
	next := slices.Clone(gs)
	if i >= 0 {
		next[i] = &g
	} else {
		next = append(next, &g)
	}
	c.groups.Store(&next)
}

// counter returns the counter of set, shared by every destination with
// that attribute set, and with it the set's histogram when the durations
// are kept by a Durations.
func (c *cache) counter(set attribute.Set) *counter {
	if v, ok := c.counters.Load(set.Equivalent()); ok {
		return v.(*counter)
	}
	ct := &counter{opts: []metric.ObserveOption{metric.WithAttributeSet(set)}}
	if c.durs != nil {
		ct.h = c.durs.hist(set)
	}
	v, _ := c.counters.LoadOrStore(set.Equivalent(), ct)
	return v.(*counter)
}

// observe reports every counter that has counted to o as the value of
// inst.
func (c *cache) observe(o metric.Observer, inst metric.Int64Observable) {
	c.counters.Range(func(_, v any) bool {
		ct := v.(*counter)
		if n := ct.n.Load(); n != 0 {
			o.ObserveInt64(inst, n, ct.opts...)
		}
		return true
	})
}

// serverAddr returns the host and port of the first broker in a Pulsar
// service URL ("pulsar://h1:6650,h2:6650", "pulsar+ssl://h"): the port
// defaults to 6650, or 6651 for pulsar+ssl.
func serverAddr(url string) (string, int) {
	rest, port := url, 6650
	if scheme, after, ok := strings.Cut(rest, "://"); ok {
		rest = after
		if scheme == "pulsar+ssl" {
			port = 6651
		}
	}
	if i := strings.IndexByte(rest, ','); i >= 0 {
		rest = rest[:i]
	}
	rest = strings.TrimSuffix(rest, "/")
	if h, p, err := net.SplitHostPort(rest); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			return h, n
		}
		return h, port
	}
	return strings.TrimSuffix(strings.TrimPrefix(rest, "["), "]"), port
}
