package specreader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/keyroute/keyroute/router"
)

// Cluster is one cluster the reader knows.
type Cluster struct {
	Name       string
	ServiceURL string
}

// Options configure New. Clusters, Topic, Subscription, HoldTimeout,
// HoldLimit and Deliver are required.
type Options struct {
	Clusters     []Cluster
	Topic        string
	Subscription string
	// Failover subscribes Failover instead of Exclusive, with the
	// consumer name ConsumerName on every cluster (HANDOVER.md section 8).
	Failover     bool
	ConsumerName string
	// Deferred names clusters the reader knows (an origin there waits)
	// but subscribes only when Subscribe is called: a reader that starts
	// reading a cluster late.
	Deferred []string
	// HoldLimit is the reader's bound on messages held: when they reach
	// it, each partition that holds messages is stopped (not read) until
	// it holds none. HoldTimeout releases by force the holds whose origin
	// makes no progress: its partition has held nothing and kept its
	// delivered frontier for HoldTimeout (section 6.3).
	HoldTimeout time.Duration
	HoldLimit   int
	// PartitionDiscovery is how often the reader looks for new
	// partitions (section 6.4); 0 means a second.
	PartitionDiscovery time.Duration
	// Deliver gets every delivered message, serially under the reader's
	// lock: it must not block nor call the Reader.
	Deliver func(Delivery)
	// Released, when set, gets every forced release and every origin
	// on a cluster the reader does not know, under the same lock.
	Released func(Release)
}

// Delivery is one message delivered to the application.
type Delivery struct {
	Cluster    string
	Partition  int32
	Pos        router.Position
	Key        string
	Payload    []byte
	Properties map[string]string
	// Seq is the message's rank in the order the reader received messages
	// from all clusters (from 1): sorting deliveries by Seq gives what a
	// naive reader, delivering on receipt, would have delivered.
	Seq        int64
	ReceivedAt time.Time
	At         time.Time
	// Held is true when the message waited in a hold queue; Forced when a
	// forced release delivered it.
	Held, Forced bool
}

// Release reports an origin the reader gave up on: a hold released
// without it passed.
type Release struct {
	Cluster   string // of the hold queue
	Partition int32
	Slot      int
	Producer  uint64
	Epoch     uint64
	Origin    router.Origin // the origin given up on
	Reason    string        // "no progress" or "unknown cluster"
	Messages  int           // delivered by the release
	// Held is how long the queue's head was held, from its receipt (0
	// for an origin on a cluster not known).
	Held time.Duration
}

// Stats counts what the reader did.
type Stats struct {
	Received     int64 // messages and markers
	Delivered    int64
	Markers      int64
	MarkersAcked int64
	Held         int64 // messages that waited in a hold queue
	MaxHeld      int   // the most held at once
	Stops        int64 // times a partition was stopped at HoldLimit
	Forced       int64 // messages delivered by a forced release
	Unordered    int64 // moved messages marked keyroute-unordered
	BadTags      int64 // messages whose keyroute- properties do not parse
}

// ErrBadOptions is returned by New when an option is missing or wrong.
var ErrBadOptions = errors.New("specreader: bad options")

type partKey struct {
	cluster   string
	partition int32
}

type queueKey struct {
	partKey
	slot int
}

// entry is one received message of a partition, until the frontier passes
// it.
type entry struct {
	pos    router.Position
	done   bool             // delivered, or a marker processed
	marker pulsar.MessageID // acknowledged when the frontier passes it
}

// part is a partition read, or one that origins name.
type part struct {
	frontier router.Position
	seen     bool     // frontier is set
	pending  []*entry // received, not yet within the frontier, in order
	// givenUp is the last origin on the partition given up on (see
	// tick): origins at or before it pass.
	givenUp router.Position
	gaveUp  bool // givenUp is set
	// resume is nil while the partition is read; while it is stopped
	// (see hold), its reader waits for it to close.
	resume chan struct{}
}

// progress is what tick last saw of a partition that queues wait on.
type progress struct {
	at       time.Time
	frontier router.Position
	seen     bool
}

type held struct {
	e      *entry
	d      Delivery
	id     pulsar.MessageID
	tag    router.Tag // its origins on clusters not known dropped
	unread bool       // an origin on a cluster not known was dropped
}

// queue is the hold queue of one partition and slot.
type queue struct {
	key     queueKey
	items   []*held
	waiting bool // registered in Reader.waiting
}

// Reader reads one subscription of a topic on every cluster it knows.
type Reader struct {
	opts    Options
	known   map[string]bool
	clients map[string]pulsar.Client
	cancel  context.CancelFunc
	ctx     context.Context
	wg      sync.WaitGroup
	close   sync.Once

	mu         sync.Mutex // guards everything below and the calls to Deliver
	subscribed map[string]bool
	consumers  map[partKey]pulsar.Consumer // one per partition
	parts      map[partKey]*part
	queues     map[queueKey]*queue
	waiting    map[partKey][]*queue // queues whose head waits on that partition
	progress   map[partKey]progress // of the partitions in waiting (see tick)
	nheld      int
	seq        int64
	stats      Stats
	closed     bool
}

// New makes a client per cluster and subscribes every cluster not
// Deferred. ctx bounds the subscriptions.
func New(ctx context.Context, o Options) (*Reader, error) {
	switch {
	case len(o.Clusters) == 0, o.Topic == "", o.Subscription == "", o.Deliver == nil:
		return nil, fmt.Errorf("%w: Clusters, Topic, Subscription and Deliver are required", ErrBadOptions)
	case o.HoldTimeout <= 0 || o.HoldLimit <= 0:
		return nil, fmt.Errorf("%w: HoldTimeout %s and HoldLimit %d must be positive", ErrBadOptions, o.HoldTimeout, o.HoldLimit)
	}
	if o.PartitionDiscovery == 0 {
		o.PartitionDiscovery = time.Second
	}
	r := &Reader{
		opts: o, known: map[string]bool{}, clients: map[string]pulsar.Client{},
		subscribed: map[string]bool{}, consumers: map[partKey]pulsar.Consumer{}, parts: map[partKey]*part{},
		queues: map[queueKey]*queue{}, waiting: map[partKey][]*queue{}, progress: map[partKey]progress{},
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	for _, c := range o.Clusters {
		if r.known[c.Name] {
			r.Close()
			return nil, fmt.Errorf("%w: cluster %q twice", ErrBadOptions, c.Name)
		}
		r.known[c.Name] = true
		cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, Logger: plog.DefaultNopLogger()})
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("specreader: cluster %q: %w", c.Name, err)
		}
		r.clients[c.Name] = cl
	}
	for _, c := range o.Clusters {
		if slices.Contains(o.Deferred, c.Name) {
			continue
		}
		if err := r.Subscribe(ctx, c.Name); err != nil {
			r.Close()
			return nil, err
		}
	}
	r.wg.Add(1)
	go r.bound()
	return r, nil
}

// Subscribe subscribes a known cluster that is not subscribed yet (a
// Deferred one), at the earliest position: one consumer per partition,
// and the partitions added later as the reader finds them (see discover).
func (r *Reader) Subscribe(ctx context.Context, name string) error {
	cl, ok := r.clients[name]
	if !ok {
		return fmt.Errorf("%w: unknown cluster %q", ErrBadOptions, name)
	}
	r.mu.Lock()
	if r.closed || r.subscribed[name] {
		r.mu.Unlock()
		return fmt.Errorf("%w: cluster %q subscribed twice or reader closed", ErrBadOptions, name)
	}
	r.subscribed[name] = true
	r.mu.Unlock()
	if err := r.subscribeNew(ctx, name, cl); err != nil {
		return err
	}
	r.wg.Add(1)
	go r.discover(name, cl)
	return nil
}

// subscribeNew subscribes the partitions of the topic on cluster name
// that the reader does not read yet, each on its own.
func (r *Reader) subscribeNew(ctx context.Context, name string, cl pulsar.Client) error {
	topics, err := cl.TopicPartitions(r.opts.Topic)
	if err != nil {
		return fmt.Errorf("specreader: cluster %q: partitions: %w", name, err)
	}
	for i, topic := range topics {
		pk := partKey{name, int32(i)}
		r.mu.Lock()
		have := r.consumers[pk] != nil
		r.mu.Unlock()
		if have {
			continue
		}
		cons, err := r.subscribeOne(ctx, cl, topic)
		if err != nil {
			return fmt.Errorf("specreader: cluster %q: subscribe %s: %w", name, topic, err)
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			cons.Close()
			return fmt.Errorf("%w: reader closed", ErrBadOptions)
		}
		r.consumers[pk] = cons
		r.mu.Unlock()
		r.wg.Add(1)
		go r.read(pk, cons)
	}
	return nil
}

// subscribeOne subscribes one partition's topic (or the topic, when it is
// not partitioned) at the earliest position.
func (r *Reader) subscribeOne(ctx context.Context, cl pulsar.Client, topic string) (pulsar.Consumer, error) {
	typ := pulsar.Exclusive
	if r.opts.Failover {
		typ = pulsar.Failover
	}
	for {
		cons, err := cl.Subscribe(pulsar.ConsumerOptions{
			Topic: topic, SubscriptionName: r.opts.Subscription, Type: typ,
			Name:                        r.opts.ConsumerName,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
			ReceiverQueueSize:           1000,
		})
		if err == nil || ctx.Err() != nil {
			return cons, err
		}
		select { // a cluster just started may refuse a first subscribe
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// discover looks the partition count of cluster name up every
// PartitionDiscovery and subscribes the partitions added. The reader
// does not use pulsar-client-go's own discovery: v0.21.0 closes the old
// partitions' consumers for good when subscribing a new one fails
// (apache/pulsar-client-go#1426).
func (r *Reader) discover(name string, cl pulsar.Client) {
	defer r.wg.Done()
	t := time.NewTicker(r.opts.PartitionDiscovery)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
			_ = r.subscribeNew(r.ctx, name, cl) // tried again at the next tick
		}
	}
}

// read takes cons's messages, those of partition pk, in the order
// pulsar-client-go gives them, one at a time, and none while pk is
// stopped: they wait in cons's receive queue and on the broker.
func (r *Reader) read(pk partKey, cons pulsar.Consumer) {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		stopped := r.part(pk).resume
		r.mu.Unlock()
		if stopped != nil {
			select {
			case <-r.ctx.Done():
				return
			case <-stopped:
				continue
			}
		}
		m, err := cons.Receive(r.ctx)
		if err != nil { // the reader closes
			return
		}
		r.receive(pk, m)
	}
}

// Stats returns the counts so far.
func (r *Reader) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// HeldNow returns how many messages are held.
func (r *Reader) HeldNow() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nheld
}

// Close stops reading and closes the consumers and clients; holds are
// dropped undelivered (not acknowledged: Pulsar delivers them again).
// Calling it again does nothing.
func (r *Reader) Close() {
	r.close.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		r.cancel()
		r.wg.Wait()
		for _, c := range r.consumers {
			c.Close()
		}
		for _, c := range r.clients {
			c.Close()
		}
	})
}

// bound releases the holds whose origin makes no progress (see tick).
func (r *Reader) bound() {
	defer r.wg.Done()
	t := time.NewTicker(max(r.opts.HoldTimeout/8, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case now := <-t.C:
			r.mu.Lock()
			r.tick(now)
			r.mu.Unlock()
		}
	}
}
