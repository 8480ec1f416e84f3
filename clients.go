package keyroute

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/keyroute/keyroute/topology"
)

// Clients is one pulsar-client-go client per cluster of a topology, shared
// by any number of producers and consumers.
type Clients struct {
	topo    *topology.Topology
	cfg     cfg
	clients []pulsar.Client // in topology order
	index   map[string]int

	mu     sync.Mutex
	closed bool
	users  map[*user]struct{} // producers and consumers open on it
}

// user is a producer or consumer attached to a Clients.
type user struct{ close func() }

// NewClients validates topo and makes a client for each of its clusters.
// pulsar-client-go connects on first use, so NewClients does not wait for
// any cluster; errors are those of the topology and options (each naming
// the cluster and field).
func NewClients(topo *topology.Topology, opts ...Opt) (*Clients, error) {
	c := cfg{memoryLimit: DefaultMemoryLimit}
	for _, o := range opts {
		o.apply(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := topo.Validate(); err != nil { // a nil topo has no clusters
		return nil, fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	cs := &Clients{topo: topo, cfg: c, index: make(map[string]int, len(topo.Clusters)), users: map[*user]struct{}{}}
	for i, cl := range topo.Clusters {
		client, err := Open(cl, c.transactions, c.memoryLimit, c.logger, c.configure)
		if err != nil {
			for _, made := range cs.clients {
				made.Close()
			}
			return nil, err
		}
		cs.clients = append(cs.clients, client)
		cs.index[cl.Name] = i
	}
	return cs, nil
}

// Open makes the pulsar-client-go client of one cluster as keyroute does
// (the producer and consumer use it for the clients they open on their
// own): options from the topology (Cluster.ClientOptions), the memory
// limit (0: pulsar-client-go's default), transactions, logs through logger (none when nil) with a
// "cluster" attribute, metrics labelled with the cluster, then configure.
func Open(cl topology.Cluster, transactions bool, memoryLimit int64, logger *slog.Logger, configure func(string, *pulsar.ClientOptions)) (pulsar.Client, error) {
	o, err := cl.ClientOptions()
	if err != nil {
		return nil, err
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

// Client returns the client of the named cluster.
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
	users := make([]*user, 0, len(cs.users))
	for u := range cs.users {
		users = append(users, u)
	}
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
	for _, c := range cs.clients {
		c.Close()
	}
	return nil
}
