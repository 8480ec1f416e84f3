package keyroute

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/keyroute/keyroute/topology"
)

// Clients is one pulsar-client-go client per cluster of a topology, shared
// by any number of producers and consumers.
type Clients struct {
	topo  *topology.Topology
	cfg   cfg
	index map[string]int

	mu      sync.Mutex
	clients []pulsar.Client // in topology order; nil while a cluster's is opening
	opening []error         // by cluster: why its client is not open yet (nil once open)
	closed  bool
	users   map[*user]struct{} // producers and consumers open on it
	stop    chan struct{}      // closed by Close: opening goroutines give up
	bg      sync.WaitGroup     // the opening goroutines; Close waits for them
}

// user is a producer or consumer attached to a Clients.
type user struct{ close func() }

// NewClients validates topo and makes a client for each of its clusters,
// in parallel. Without transactions pulsar-client-go connects on first
// use, so a client is made at once and errors are those of the topology
// and options (each naming the cluster and field). With transactions, a
// client looks up its cluster's transaction coordinator when it is made:
// NewClients waits at most StartTimeout for each, and a cluster whose
// client is not made by then (no answer) is made in the background, tried
// again every second until it is; Client returns ErrNotOpen for it
// meanwhile, and producers and consumers made from the Clients start with
// that cluster down. A cluster that answers with an error before
// StartTimeout makes NewClients fail, naming it. Close waits for a client
// still being made: against a cluster that accepts connections but does
// not answer (a stopped broker), pulsar-client-go v0.21.0 waits for the
// handshake until its keep-alive (ClientOptions.KeepAliveInterval, 30s by
// default) gives the connection up, whatever the operation timeout.
func NewClients(topo *topology.Topology, opts ...Opt) (*Clients, error) {
	c := cfg{memoryLimit: DefaultMemoryLimit, startTimeout: DefaultStartTimeout}
	for _, o := range opts {
		o.apply(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := topo.Validate(); err != nil { // a nil topo has no clusters
		return nil, fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	n := len(topo.Clusters)
	cs := &Clients{topo: topo, cfg: c, index: make(map[string]int, n), users: map[*user]struct{}{},
		clients: make([]pulsar.Client, n), opening: make([]error, n), stop: make(chan struct{})}
	ended := make(chan int, n) // a first attempt ended
	first := make([]error, n)  // its error; written before it is sent on ended
	// The options first, one cluster after the other: configure need not
	// be safe for concurrent use.
	options := make([]pulsar.ClientOptions, n)
	for i, cl := range topo.Clusters {
		o, err := clientOptions(cl, c.transactions, c.memoryLimit, c.logger, c.configure)
		if err != nil {
			return nil, err
		}
		options[i] = o
		cs.index[cl.Name] = i
		cs.opening[i] = fmt.Errorf("%w: cluster %q: no answer yet", ErrNotOpen, cl.Name)
	}
	for i := range topo.Clusters {
		cs.bg.Add(1)
		go cs.open(i, options[i], first, ended)
	}
	timer := time.NewTimer(c.startTimeout)
	defer timer.Stop()
	var failed []error
	for pending := n; pending > 0; {
		select {
		case i := <-ended:
			pending--
			if first[i] != nil {
				failed = append(failed, first[i])
			}
			continue
		case <-timer.C:
		}
		break
	}
	if len(failed) > 0 {
		_ = cs.Close()
		return nil, errors.Join(failed...)
	}
	return cs, nil
}

// coordinatorTopic is Pulsar's topic that assigns transaction
// coordinators; a transactional client looks it up when it is made.
const coordinatorTopic = "persistent://pulsar/system/transaction_coordinator_assign"

// answers returns nil when the cluster of o answers a lookup of the
// transaction coordinators' topic (or o has transactions off: nothing to
// ask). It asks through a client without transactions, which connects on
// first use: pulsar-client-go v0.21.0's NewClient, when its transaction
// coordinator lookup fails, returns without closing what it opened (a
// connection pool and its goroutine), so a cluster that gives no answer
// would leak one per attempt. The lookup is bounded by the operation
// timeout.
func answers(o pulsar.ClientOptions) error {
	if !o.EnableTransaction {
		return nil
	}
	o.EnableTransaction = false
	probe, err := pulsar.NewClient(o)
	if err != nil {
		return err
	}
	defer probe.Close()
	if _, err := probe.TopicPartitions(coordinatorTopic); err != nil {
		return fmt.Errorf("look up %s: %w", coordinatorTopic, err)
	}
	return nil
}

// DefaultStartTimeout is how long NewClients waits for a cluster's client
// when StartTimeout is not given.
const DefaultStartTimeout = 3 * time.Second

// open makes cluster i's client, on its own goroutine. It reports its
// first attempt's end on ended (as long as NewClients may wait for it),
// with the error in first[i] when the cluster answered with one (none
// when it gave no answer: see answers); an attempt that fails is tried
// again a second later, until one succeeds or Close.
func (cs *Clients) open(i int, o pulsar.ClientOptions, first []error, ended chan<- int) {
	defer cs.bg.Done()
	cl := cs.topo.Clusters[i]
	for attempt := 0; ; attempt++ {
		var client pulsar.Client
		err := answers(o)
		unanswered := err != nil
		if err == nil {
			client, err = newClient(cl, o)
		}
		cs.mu.Lock()
		closed := cs.closed
		if err == nil && !closed {
			cs.clients[i], cs.opening[i] = client, nil
		} else if err != nil {
			cs.opening[i] = fmt.Errorf("%w: %w", ErrNotOpen, err)
		}
		cs.mu.Unlock()
		if closed && client != nil {
			client.Close()
		}
		if attempt == 0 {
			if !unanswered {
				first[i] = err
			}
			ended <- i // buffered for every cluster's first attempt
		}
		if err == nil || closed {
			return
		}
		select {
		case <-cs.stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// Open makes the pulsar-client-go client of one cluster as keyroute does
// (the producer and consumer use it for the clients they open on their
// own): options from the topology (Cluster.ClientOptions), the memory
// limit (0: pulsar-client-go's default), transactions, logs through logger (none when nil) with a
// "cluster" attribute, metrics labelled with the cluster, then configure.
func Open(cl topology.Cluster, transactions bool, memoryLimit int64, logger *slog.Logger, configure func(string, *pulsar.ClientOptions)) (pulsar.Client, error) {
	o, err := clientOptions(cl, transactions, memoryLimit, logger, configure)
	if err != nil {
		return nil, err
	}
	return newClient(cl, o)
}

// clientOptions are the pulsar-client-go options Open makes a client with.
func clientOptions(cl topology.Cluster, transactions bool, memoryLimit int64, logger *slog.Logger, configure func(string, *pulsar.ClientOptions)) (pulsar.ClientOptions, error) {
	o, err := cl.ClientOptions()
	if err != nil {
		return o, err
	}
	if memoryLimit != 0 {
		o.MemoryLimitBytes = memoryLimit
	}
	o.EnableTransaction = transactions
	o.Logger = plog.DefaultNopLogger()
	if logger != nil {
		o.Logger = plog.NewLoggerWithSlog(logger.With("cluster", cl.Name))
	}
	// pulsar-client-go v0.21.0 registers every client's collectors in one
	// registerer with the labels as const labels: without a label per
	// cluster the N clients would share (and add up in) one series.
	labels := make(map[string]string, len(o.CustomMetricsLabels)+1)
	for k, v := range o.CustomMetricsLabels {
		labels[k] = v
	}
	labels["cluster"] = cl.Name
	o.CustomMetricsLabels = labels
	if configure != nil {
		configure(cl.Name, &o)
	}
	return o, nil
}

func newClient(cl topology.Cluster, o pulsar.ClientOptions) (pulsar.Client, error) {
	client, err := pulsar.NewClient(o)
	if err != nil {
		return nil, fmt.Errorf("keyroute: cluster %q: %w", cl.Name, err)
	}
	return client, nil
}

// Topology returns the topology the Clients were made for. It must not be
// modified.
func (cs *Clients) Topology() *topology.Topology { return cs.topo }

// Transactions reports whether the clients have transactions on.
func (cs *Clients) Transactions() bool { return cs.cfg.transactions }

// Client returns the client of the named cluster, or an error matching
// ErrNotOpen (with why) while it is not made yet (see NewClients).
func (cs *Clients) Client(cluster string) (pulsar.Client, error) {
	i, ok := cs.index[cluster]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownCluster, cluster)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil, ErrClosed
	}
	if cs.clients[i] == nil {
		return nil, cs.opening[i]
	}
	return cs.clients[i], nil
}

// Check returns nil when topo has the clusters the Clients were made for
// (the same names, service URLs and weights, in the same order), else an
// ErrOtherTopology error naming the first cluster that differs.
func (cs *Clients) Check(topo *topology.Topology) error {
	if topo == cs.topo {
		return nil
	}
	if topo == nil {
		return fmt.Errorf("%w: nil topology", ErrOtherTopology)
	}
	for i := range max(len(topo.Clusters), len(cs.topo.Clusters)) {
		switch {
		case i >= len(topo.Clusters):
			return fmt.Errorf("%w: cluster %q is missing", ErrOtherTopology, cs.topo.Clusters[i].Name)
		case i >= len(cs.topo.Clusters):
			return fmt.Errorf("%w: cluster %q is not one of theirs", ErrOtherTopology, topo.Clusters[i].Name)
		}
		a, b := topo.Clusters[i], cs.topo.Clusters[i]
		if a.Name != b.Name || a.ServiceURL != b.ServiceURL || a.Weight != b.Weight {
			return fmt.Errorf("%w: cluster %q (at %d) differs from theirs, %q", ErrOtherTopology, a.Name, i, b.Name)
		}
	}
	return nil
}

// Attach registers a producer or consumer made from the Clients: Close
// calls closeFn (once) if the user is still attached. The user calls
// detach from its own Close. For packages built on the Clients (producer,
// consumer); it returns ErrClosed once Close has begun.
func (cs *Clients) Attach(closeFn func()) (detach func(), err error) {
	u := &user{close: closeFn}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil, ErrClosed
	}
	cs.users[u] = struct{}{}
	return func() {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		delete(cs.users, u)
	}, nil
}

// Close closes every producer and consumer still attached (in parallel),
// then every client. It is safe to call more than once; later calls
// return nil at once.
func (cs *Clients) Close() error {
	cs.mu.Lock()
	if cs.closed {
		cs.mu.Unlock()
		return nil
	}
	cs.closed = true
	close(cs.stop)
	users := make([]*user, 0, len(cs.users))
	for u := range cs.users {
		users = append(users, u)
	}
	clients := slices.Clone(cs.clients)
	cs.mu.Unlock()
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.close()
		}()
	}
	wg.Wait()
	for _, c := range clients {
		if c != nil {
			c.Close()
		}
	}
	cs.bg.Wait() // a client still being made closes itself when it is
	return nil
}
