package consumer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/topology"
)

// Consumer reads one subscription of a topic on every cluster of a
// topology as one stream. It is safe for concurrent use.
type Consumer struct {
	cfg cfg

	// set is the clusters as they stand (see clusterSet): takes read it
	// once per take, with no lock. Changes (a join, an Update, the end
	// of a drain, Close) are made under setMu, which also guards
	// joinsStopped.
	set   atomic.Pointer[clusterSet]
	setMu sync.Mutex
	// readMu orders the stores of set (publish, setStopped) and guards
	// each part's stopped; taken under setMu or the holder's lock, and
	// nothing is locked under it.
	readMu       sync.Mutex
	joinsStopped bool       // Close has begun: nothing joins from now on
	updateMu     sync.Mutex // one Update at a time

	// rotor is the index of the part a take tries first: the one after
	// the part of the last message taken, so that the partitions that
	// have messages take turns (a busy one cannot starve the others).
	rotor atomic.Uint32
	// slab is where Receive carves its Messages from (see carve).
	slab atomic.Pointer[slab]

	// gate orders takes against seeks: a take holds it shared
	// (RLock) from reading the state until the message is out of the
	// clusters' channels; a seek holds it alone while pulsar-client-go
	// seeks (SeekByTime) or while it takes the clusters it moves out of
	// the read set (SeekByID). state is the seek state, read under the
	// gate (see pause).
	gate  sync.RWMutex
	state atomic.Pointer[pause]

	// out is Chan's channel, made on the first Chan call and fed by a
	// goroutine of its own (feed); nil until then. Guarded by mu.
	out chan *Message

	// ended is closed and replaced (under mu) each time a join attempt
	// ends, for New and Update to look at the clusters again.
	ended chan struct{}

	closing   chan struct{}   // closed when Close begins
	joinCtx   context.Context // ends when Close begins: join attempts give up
	stopJoins context.CancelFunc
	closeDone chan struct{} // closed when Close's closing has ended
	closed    atomic.Bool
	closeOnce sync.Once
	bg        sync.WaitGroup // the monitor and feed
	probes    sync.WaitGroup // probes in flight
	acks      sync.WaitGroup // acks waited for on goroutines of their own (ackUntil)
	attempts  sync.WaitGroup // join attempts and drains in flight
	mu        sync.Mutex     // orders acks.Add, bg.Add (feed) and attempts.Add before Close's waits; guards out and ended
	seekMu    sync.Mutex     // one seek (SeekByTime, SeekByID) at a time
	detach    func()         // from the shared clients (WithClients); nil without
	hold      holder         // the hand-over's holds (hold.go)

	// subs are the Consumers of each topic when Topics names several
	// (topics.go), nil otherwise; ins are their Chan channels.
	subs []*Consumer
	ins  []<-chan *Message
}

// clusterSet is the Consumer's clusters at one moment. It is replaced,
// never changed: a change builds the next set under setMu, stores it,
// then closes the old set's changed, which ends the waits of takes that
// read the old one (they look again).
type clusterSet struct {
	// read holds the clusters with an open subscription, the ones takes
	// read: those of the topology that have joined, in topology order,
	// then those removed by an Update and still draining.
	read   []*cluster
	byName map[string]*cluster // read, by name
	// parts are the parts of read, cluster by cluster, each's in
	// partition order: what takes read.
	parts []*part
	// members holds every cluster, joined or not: the topology's in its
	// order, then those draining.
	members []*member
	changed chan struct{}
}

// member is the Consumer's state of one cluster of its topology, kept
// across the subscriptions it has there (a reconnect replaces the
// subscription, not the member).
type member struct {
	name  string
	cl    topology.Cluster      // as the topology that added it or changed it last gave it
	adm   atomic.Pointer[admin] // the admin API; nil when the topology gives none
	share int                   // this cluster's share of MaxBuffered

	delivered   atomic.Uint64 // handed to the caller
	acked       atomic.Uint64
	nacked      atomic.Uint64
	redelivered atomic.Uint64 // delivered with a RedeliveryCount above 0
	lastPublish atomic.Int64  // unix ns of the last delivered message's publish time

	// Probes, written by the monitor and its probe goroutines.
	probeOK    atomic.Bool
	probeStart atomic.Int64 // unix ns of the probe in flight, 0 when none

	hold clusterHold // the hand-over's frontiers and counters (hold.go)

	cur      atomic.Pointer[cluster] // its open subscription; nil until it joins
	trying   atomic.Bool             // a join attempt is running
	removed  atomic.Bool             // an Update removed it: it joins no more
	draining atomic.Bool             // removed, and still read until its backlog is 0

	checking atomic.Bool // a drain's backlog check is running

	// Partition discovery (grow.go): discovering is set while a lookup
	// runs, growing while new partitions are subscribed; discovered, the
	// monitor's own, is when it last started one; lookNow asks for one
	// at the monitor's next round (a hold waits on a partition past those
	// subscribed); partsErr is Health's PartitionsErr (a shrink, a failed
	// growth), nil when none.
	discovering atomic.Bool
	growing     atomic.Bool
	lookNow     atomic.Bool
	discovered  time.Time
	partsErr    atomic.Pointer[error]

	jmu        sync.Mutex // guards the fields below
	err        error      // the last join attempt's error; errNoAnswer before the first ended
	lastEnd    time.Time  // when the last join attempt ended
	late       bool       // a new subscription starts at Earliest (see join.go)
	drainSince time.Time  // when an Update removed it
}

// admin returns the member's admin API, nil without one.
func (m *member) admin() *admin { return m.adm.Load() }

// cluster is one open subscription of a member: what takes read and
// acknowledgements go to. The member's counters are its own.
type cluster struct {
	*member
	owner *Consumer
	link  *link
	// parts are the subscription's streams as takes read them: one per
	// partition, by index, or with link.whole the one over every
	// partition. A growth replaces the slice with a longer one (under the
	// Consumer's setMu, see grow.go); the parts in it never change.
	parts atomic.Pointer[[]*part]
	// gone is set once the subscription left the read set to be closed
	// (a reconnect, the end of a drain, Close): acknowledgements of its
	// messages go by ID to the member's current subscription.
	gone atomic.Bool
	// retries counts the ReconsumeLater hand-overs to the stream in
	// flight, which close waits for, within a bound (see retry.go).
	retries retryGate
}

// part is one stream of a cluster's subscription, the unit takes read:
// one partition's pulsar-client-go consumer, each with its own channel,
// so that the merge takes from each partition on its own.
type part struct {
	k      *cluster
	idx    int32         // the partition; -1: every partition (link.whole), each message's ID names its own
	at     atomic.Uint32 // its index in the read set it was last published in
	stream stream
	in     <-chan pulsar.ConsumerMessage // stream.Chan()
	// stopped leaves the part out of the read set: the hand-over's
	// back-pressure (see holder.press). Guarded by the Consumer's readMu.
	stopped bool
}

// newParts returns the parts of streams, the partitions from first on
// (whole: the one stream over every partition).
func (k *cluster) newParts(streams []stream, first int) []*part {
	ps := make([]*part, len(streams))
	for i, s := range streams {
		ps[i] = &part{k: k, idx: int32(first + i), stream: s, in: s.Chan()}
		if k.link.whole {
			ps[i].idx = -1
		}
	}
	return ps
}

// partition returns the partition of raw, taken from p.
func (p *part) partition(raw pulsar.Message) int32 {
	if p.idx >= 0 {
		return p.idx
	}
	return max(0, raw.ID().PartitionIdx())
}

// part returns the part that reads partition i of k's subscription, nil
// when it reads none of that index.
func (k *cluster) part(i int32) *part {
	ps := *k.parts.Load()
	if k.link.whole {
		return ps[0]
	}
	if i < 0 || int(i) >= len(ps) {
		return nil
	}
	return ps[i]
}

// partCount is how many partitions k's subscription reads.
func (k *cluster) partCount() int {
	if k.link.whole {
		return k.link.parts
	}
	return len(*k.parts.Load())
}

// New validates the topology and options and subscribes on every cluster
// (on every partition of the topic there, each with a pulsar-client-go
// consumer of its own), in parallel.
//
// New returns once every cluster is subscribed, or once StartTimeout has
// passed with at least one subscribed: the clusters that have not
// answered by then start down (Health says so and why: Connected is
// false, Err the last attempt's error), and each joins by itself when it
// answers, tried every ProbeInterval; Receive, ReceiveBatch, ReceiveInto
// and Chan take its messages from then on. A cluster that is not
// subscribed at its first attempt subscribes at Earliest whatever
// InitialPosition says: an existing subscription resumes from its cursor,
// a new one starts at the first message still stored, so nothing written
// while it was out is skipped. A cluster that answers with an error (the topic missing there,
// the subscription busy, credentials refused) before then makes New fail,
// naming it; RequireAllClusters makes New wait for every cluster and fail
// unless all subscribed. With WithClients, a cluster whose shared client
// is not open yet (keyroute.ErrNotOpen) has not answered.
//
// ctx bounds New; when it ends first, New returns an error matching
// ctx.Err(), naming each cluster not subscribed. pulsar-client-go's own
// calls take no ctx: they are bounded by each cluster's operation timeout
// (and against a broker that accepts connections but does not answer, by
// its keep-alive); an attempt in one when New returns goes on in the
// background, and Close waits for it.
func New(ctx context.Context, topo *topology.Topology, opts ...Opt) (*Consumer, error) {
	c := defaultCfg()
	for _, o := range opts {
		o.apply(&c)
	}
	if err := c.validateTopics(); err != nil {
		return nil, err
	}
	if len(c.topics) > 1 {
		return newTopics(ctx, topo, c)
	}
	return newConsumer(ctx, topo, c)
}

// newConsumer is New for one topic, c.topic.
func newConsumer(ctx context.Context, topo *topology.Topology, c cfg) (*Consumer, error) {
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
	if err := c.startAt(topo); err != nil { // StartAfter (position.go)
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := len(topo.Clusters)
	members := make([]*member, n)
	for i, cl := range topo.Clusters {
		m, err := newMember(cl, max(1, c.maxBuffered/n))
		if err != nil {
			for _, m := range members[:i] {
				m.admin().close()
			}
			return nil, err
		}
		members[i] = m
	}
	co := &Consumer{cfg: c, closing: make(chan struct{}), closeDone: make(chan struct{}), ended: make(chan struct{})}
	co.joinCtx, co.stopJoins = context.WithCancel(context.Background())
	co.state.Store(&pause{begin: make(chan struct{})})
	co.hold.init(co)
	co.set.Store(&clusterSet{members: members, byName: map[string]*cluster{}, changed: make(chan struct{})})
	// The first attempts subscribe at InitialPosition until New returns;
	// one still running then stops before it subscribes, and the next
	// subscribes at Earliest (see join.go).
	startCtx, endStart := context.WithCancel(co.joinCtx)
	for _, m := range members {
		co.startAttempt(startCtx, m)
	}
	co.bg.Add(1)
	go co.monitor() // probes, and tries again the clusters whose first attempt failed
	err := co.awaitJoins(ctx, members, c.startAll)
	endStart()
	if err == nil && c.clients != nil {
		var detach func()
		if detach, err = c.clients.AttachUser(keyroute.User{Name: fmt.Sprintf("consumer %q of %q", c.subscription, c.topic),
			Close: co.Close, Update: co.update, Reader: true}); err == nil {
			co.detach = detach
		}
	}
	if err != nil {
		_ = co.Close(ctx)
		return nil, err
	}
	return co, nil
}

// newMember returns the state of cluster cl; a bad TLS or token file for
// its admin API is an error naming the cluster.
func newMember(cl topology.Cluster, share int) (*member, error) {
	a, err := newAdmin(cl)
	if err != nil {
		return nil, clusterErr(cl.Name, "admin", err)
	}
	m := &member{name: cl.Name, cl: cl, share: share, err: errNoAnswer}
	m.adm.Store(a)
	return m, nil
}

// Topic returns the topic the Consumer reads; with Topics, the first.
func (c *Consumer) Topic() string {
	if c.subs != nil {
		return c.cfg.topics[0]
	}
	return c.cfg.topic
}

// Topics returns the topics the Consumer reads, in the order given.
func (c *Consumer) Topics() []string {
	if c.subs != nil {
		return slices.Clone(c.cfg.topics)
	}
	return []string{c.cfg.topic}
}

// Subscription returns the subscription name.
func (c *Consumer) Subscription() string { return c.cfg.subscription }

// Close stops the stream (Receive and ReceiveBatch return ErrClosed, Chan
// is closed), then closes every cluster's pulsar-client-go consumer, which
// sends the acknowledgements still grouped, and client. Messages received
// from the brokers but not taken are not acknowledged: they come again to
// the subscription. ctx bounds the wait for the clusters: a consumer of an
// unreachable cluster takes up to that cluster's operation timeout to
// close, and so may a probe, an AckWithResponse or a join attempt in
// flight. When ctx ends first, Close returns an error matching ctx.Err()
// and the closing goes on in the background (its grouped acknowledgements
// may not be sent yet); a later Close waits for it again. Otherwise Close
// returns nil once every goroutine the Consumer started has ended, but
// for a ReconsumeLater's hand-over that pulsar-client-go has not taken
// within the cluster's operation timeout (see ReconsumeLater). Calls
// other than Close and Health after Close return ErrClosed.
func (c *Consumer) Close(ctx context.Context) error {
	if c == nil {
		return ErrClosed
	}
	if c.subs != nil {
		return c.closeTopics(ctx)
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
		c.stopJoins()
		c.bg.Wait() // the monitor and Chan's goroutine end at once
		c.setMu.Lock()
		c.joinsStopped = true
		s := c.set.Load()
		c.setMu.Unlock()
		go func() {
			defer close(c.closeDone)
			closeClusters(s.read)
			c.attempts.Wait() // an attempt that opens a subscription now closes it
			for _, m := range s.members {
				m.admin().close()
			}
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

// closeClusters closes the subscriptions of ks, then their clients (when
// the Consumer opened them), in parallel.
func closeClusters(ks []*cluster) {
	var wg sync.WaitGroup
	for _, k := range ks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.close()
		}()
	}
	wg.Wait()
}

// close closes k's subscription (each part's stream) and its client
// (when the Consumer opened it).
func (k *cluster) close() {
	k.shutRetries()
	for _, p := range *k.parts.Load() {
		p.stream.Close()
	}
	k.link.close()
}

// since returns the time from unix ns t to now, 0 for t = 0.
func since(t int64) time.Duration {
	if t == 0 {
		return 0
	}
	return time.Since(time.Unix(0, t))
}
