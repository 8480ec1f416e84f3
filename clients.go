package keyroute

import (
	"context"
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
// by any number of producers and consumers. Update moves them, and every
// producer and consumer attached, to a new topology.
type Clients struct {
	cfg cfg

	updateMu sync.Mutex // one Update at a time

	mu      sync.Mutex
	topo    *topology.Topology
	entries []*entry          // in topology order
	index   map[string]*entry // by cluster name
	closed  bool
	users   map[*user]struct{} // producers and consumers open on it
	retired map[*entry]bool    // out of the topology, client not closed yet
	// pending are the clusters an Update removed that readers still read
	// and producers may still write: a user failed step 2 or 3 of that
	// Update, so they are not dropped before an Update succeeds. Guarded
	// by updateMu.
	pending []*entry
	stop    chan struct{}  // closed by Close: opening goroutines give up
	bg      sync.WaitGroup // the opening goroutines; Close waits for them
}

// entry is one cluster's client. Fields but cl are guarded by Clients.mu.
type entry struct {
	cl      topology.Cluster
	client  pulsar.Client // nil while it is being made
	opening error         // why client is nil
	stop    chan struct{} // closed when the entry is dropped before its client is made
	refs    int           // Acquire calls not released
	retired bool          // no longer in the topology: closed at its last release
}

// user is a producer or consumer attached to a Clients.
type user struct{ User }

// name is the user's Name, or a stand-in that says it has none.
func (u *user) name() string {
	if u.Name == "" {
		return "an unnamed user"
	}
	return u.Name
}

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
	cs := &Clients{cfg: c, users: map[*user]struct{}{}, retired: map[*entry]bool{}, stop: make(chan struct{})}
	entries := make([]*entry, len(topo.Clusters))
	for i, cl := range topo.Clusters {
		entries[i] = &entry{cl: cl}
	}
	cs.topo, cs.entries, cs.index = topo, entries, indexOf(entries)
	if err := cs.start(context.Background(), entries); err != nil {
		_ = cs.Close(context.Background())
		return nil, err
	}
	return cs, nil
}

func indexOf(entries []*entry) map[string]*entry {
	index := make(map[string]*entry, len(entries))
	for _, e := range entries {
		index[e.cl.Name] = e
	}
	return index
}

// start makes the client of each of entries on a goroutine of its own,
// and waits at most StartTimeout (or until ctx ends) for their first
// attempts. It returns the errors of the clusters that answered with one;
// the others go on in the background until they are made, Close, or
// their entry's stop.
func (cs *Clients) start(ctx context.Context, entries []*entry) error {
	n := len(entries)
	ended := make(chan int, n) // a first attempt ended
	first := make([]error, n)  // its error; written before it is sent on ended
	// The options first, one cluster after the other: configure need not
	// be safe for concurrent use.
	options := make([]pulsar.ClientOptions, n)
	for i, e := range entries {
		o, err := clientOptions(e.cl, cs.cfg.transactions, cs.cfg.memoryLimit, cs.cfg.logger, cs.cfg.configure)
		if err != nil {
			return err
		}
		options[i] = o
		e.opening = fmt.Errorf("%w: cluster %q: no answer yet", ErrNotOpen, e.cl.Name)
		e.stop = make(chan struct{})
	}
	for i, e := range entries {
		cs.bg.Add(1)
		go cs.open(e, options[i], func(err error) {
			first[i] = err
			ended <- i // buffered for every cluster's first attempt
		})
	}
	timer := time.NewTimer(cs.cfg.startTimeout)
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
		case <-ctx.Done():
			failed = append(failed, ctx.Err())
		}
		break
	}
	return errors.Join(failed...)
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

// open makes e's client, on its own goroutine. It calls ended once, with
// its first attempt's end: with the error when the cluster answered with
// one (nil when it gave no answer: see answers). An attempt that fails is
// tried again a second later, until one succeeds, Close, or e is dropped.
func (cs *Clients) open(e *entry, o pulsar.ClientOptions, ended func(error)) {
	defer cs.bg.Done()
	for attempt := 0; ; attempt++ {
		var client pulsar.Client
		err := answers(o)
		unanswered := err != nil
		if err == nil {
			client, err = newClient(e.cl, o)
		}
		cs.mu.Lock()
		gone := cs.closed || isClosed(e.stop)
		if err == nil && !gone {
			e.client, e.opening = client, nil
		} else if err != nil {
			e.opening = fmt.Errorf("%w: %w", ErrNotOpen, err)
		}
		cs.mu.Unlock()
		if gone && client != nil {
			client.Close()
		}
		if attempt == 0 {
			if unanswered {
				ended(nil)
			} else {
				ended(err)
			}
		}
		if err == nil || gone {
			return
		}
		select {
		case <-cs.stop:
			return
		case <-e.stop:
			return
		case <-time.After(time.Second):
		}
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
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
	warnPulsarVersion(logger)
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

// Topology returns the Clients' topology: the one they were made for, or
// the last one Update applied. It must not be modified.
func (cs *Clients) Topology() *topology.Topology {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.topo
}

// Transactions reports whether the clients have transactions on.
func (cs *Clients) Transactions() bool { return cs.cfg.transactions }

// Client returns the client of the named cluster, or an error matching
// ErrNotOpen (with why) while it is not made yet (see NewClients). A
// client that Update removes or replaces is closed once the users attached
// have applied the change: hold one across an Update with Acquire.
func (cs *Clients) Client(cluster string) (pulsar.Client, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	e, err := cs.entryLocked(cluster)
	if err != nil {
		return nil, err
	}
	return e.client, nil
}

func (cs *Clients) entryLocked(cluster string) (*entry, error) {
	e, ok := cs.index[cluster]
	switch {
	case cs.closed:
		return nil, ErrClosed
	case !ok:
		return nil, fmt.Errorf("%w: %q", ErrUnknownCluster, cluster)
	case e.client == nil:
		return nil, e.opening
	}
	return e, nil
}

// Acquire is Client for a user that must keep the client while a later
// Update removes or replaces it (to finish a hand-over there): the client
// is not closed before release is called (once). Close closes it anyway.
func (cs *Clients) Acquire(cluster string) (client pulsar.Client, release func(), err error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	e, err := cs.entryLocked(cluster)
	if err != nil {
		return nil, nil, err
	}
	e.refs++
	var once sync.Once
	return e.client, func() { once.Do(func() { cs.release(e) }) }, nil
}

func (cs *Clients) release(e *entry) {
	cs.mu.Lock()
	e.refs--
	last := e.refs == 0 && e.retired && !cs.closed
	if last {
		delete(cs.retired, e)
	}
	cs.mu.Unlock()
	if last {
		closeClient(e.client)
	}
}

// closeClient closes a client that Update retired; tests watch it.
var closeClient = func(c pulsar.Client) { c.Close() }

// Check returns nil when topo has the clusters of the Clients' topology
// (the same names, service URLs and weights, in the same order), else an
// ErrOtherTopology error naming the first cluster that differs.
func (cs *Clients) Check(topo *topology.Topology) error {
	mine := cs.Topology()
	if topo == mine {
		return nil
	}
	if topo == nil {
		return fmt.Errorf("%w: nil topology", ErrOtherTopology)
	}
	for i := range max(len(topo.Clusters), len(mine.Clusters)) {
		switch {
		case i >= len(topo.Clusters):
			return fmt.Errorf("%w: cluster %q is missing", ErrOtherTopology, mine.Clusters[i].Name)
		case i >= len(mine.Clusters):
			return fmt.Errorf("%w: cluster %q is not one of theirs", ErrOtherTopology, topo.Clusters[i].Name)
		}
		a, b := topo.Clusters[i], mine.Clusters[i]
		if a.Name != b.Name || a.ServiceURL != b.ServiceURL || a.Weight != b.Weight {
			return fmt.Errorf("%w: cluster %q (at %d) differs from theirs, %q", ErrOtherTopology, a.Name, i, b.Name)
		}
	}
	return nil
}

// A User is a producer or consumer built on the Clients (see AttachUser).
type User struct {
	// Name names the user in Clients.Update's errors, e.g. `producer
	// "orders"`.
	Name string
	// Close closes the user within ctx; Clients.Close calls it if the
	// user is still attached.
	Close func(ctx context.Context) error
	// Update applies a new topology; Clients.Update calls it. Nil: the
	// user does not follow changes, and Clients.Update fails while it is
	// attached.
	Update func(context.Context, *topology.Topology) error
	// Reader users (consumers) take added clusters before the others
	// apply a change, and drop removed ones after (see Clients.Update).
	Reader bool
}

// AttachUser registers a producer or consumer made from the Clients: Close
// closes it if it is still attached, and Update updates it. The user calls
// detach from its own Close. For packages built on the Clients (producer,
// consumer); it returns ErrClosed once Close has begun.
func (cs *Clients) AttachUser(u User) (detach func(), err error) {
	us := &user{u}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil, ErrClosed
	}
	cs.users[us] = struct{}{}
	return func() {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		delete(cs.users, us)
	}, nil
}

// Update moves the Clients to topo: it makes the clients of the clusters
// topo adds, or whose client settings it changes (topology.SameClient;
// made as NewClients does: a cluster that answers with an error fails
// Update, naming it; one that does not answer within StartTimeout is made
// in the background), keeps the others, then applies topo to every
// producer and consumer attached in the three steps of
// router/HANDOVER.md section 9, each step's users in parallel:
//
//  1. consumers take the added clusters and keep reading the removed ones;
//  2. producers move;
//  3. consumers drop the removed clusters, each read to the end.
//
// The clients of clusters topo removes or replaces are closed once every
// user has applied it, and every Acquire of them is released.
//
// A bad topology is refused (ErrBadTopology, naming what is wrong), as is
// a change while a user that cannot follow it is attached
// (ErrCannotFollow); then nothing changes. When a user fails, Update
// stops and returns an *UpdateError that names the step and the users
// that failed and says where every user stands:
//
//   - step 1: no producer has moved; the consumers are moved back to the
//     old topology (Undone, unless that failed too) and the Clients stay
//     on it, their added clients closed;
//   - step 2 or 3: the Clients and the users that applied it are on topo;
//     the removed clusters are still read (StillRead) and their clients
//     stay open, so that a producer still writing there loses nothing.
//     Calling Update again (with topo, or with another topology) finishes
//     the change: until one succeeds, every Update keeps those clusters
//     read through step 2.
//
// One Update runs at a time.
func (cs *Clients) Update(ctx context.Context, topo *topology.Topology) error {
	if err := topo.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	cs.updateMu.Lock()
	defer cs.updateMu.Unlock()
	cs.mu.Lock()
	if cs.closed {
		cs.mu.Unlock()
		return ErrClosed
	}
	for u := range cs.users {
		if u.Update == nil {
			cs.mu.Unlock()
			return ErrCannotFollow
		}
	}
	oldTopo, oldEntries := cs.topo, cs.entries
	cs.mu.Unlock()
	// The clients a cluster of topo may keep: those in use, and those of
	// clusters a failed Update left read.
	have := indexOf(cs.pending)
	for _, e := range oldEntries {
		have[e.cl.Name] = e
	}

	next := make([]*entry, len(topo.Clusters))
	var fresh []*entry
	for i, cl := range topo.Clusters {
		if e, ok := have[cl.Name]; ok && topology.SameClient(e.cl, cl) {
			next[i] = e // its cl keeps the old settings that no client uses
			continue
		}
		next[i] = &entry{cl: cl}
		fresh = append(fresh, next[i])
	}
	if err := cs.start(ctx, fresh); err != nil {
		cs.drop(fresh)
		return err
	}
	kept := make(map[*entry]bool, len(next))
	names := make(map[string]bool, len(next))
	for _, e := range next {
		kept[e], names[e.cl.Name] = true, true
	}
	// Removed: the clusters of the old entries and of pending that topo
	// does not keep. Replaced clients go too, but their cluster stays
	// in topo under its name, read through its new client.
	var removed, replaced []*entry
	for _, e := range append(slices.Clone(oldEntries), cs.pending...) {
		switch {
		case kept[e] || slices.Contains(removed, e) || slices.Contains(replaced, e):
		case names[e.cl.Name]:
			replaced = append(replaced, e)
		default:
			removed = append(removed, e)
		}
	}

	cs.mu.Lock()
	if cs.closed {
		cs.mu.Unlock()
		cs.drop(fresh)
		return ErrClosed
	}
	for _, e := range append(slices.Clone(removed), replaced...) {
		cs.retired[e] = true // until dropped: Close closes it
	}
	cs.topo, cs.entries, cs.index = topo, next, indexOf(next)
	var readers, writers []*user
	for u := range cs.users {
		if u.Reader {
			readers = append(readers, u)
		} else {
			writers = append(writers, u)
		}
	}
	cs.mu.Unlock()

	wide := widen(topo, removed)
	if failed, errs := updateAll(ctx, readers, wide); len(errs) > 0 {
		return cs.undo(ctx, readers, oldTopo, oldEntries, fresh, failed, errs)
	}
	if len(removed) > 0 {
		cs.pending = removed // read until every producer has left them
	}
	failed, errs := updateAll(ctx, writers, topo)
	if len(errs) > 0 {
		moved := slices.DeleteFunc(slices.Clone(writers), func(u *user) bool { return slices.Contains(failed, u) })
		return &UpdateError{Step: 2, Failed: userNames(failed), Errs: errs, Moved: userNames(moved), StillRead: clusterNames(removed)}
	}
	if len(removed) > 0 {
		if failed, errs := updateAll(ctx, readers, topo); len(errs) > 0 {
			return &UpdateError{Step: 3, Failed: userNames(failed), Errs: errs, StillRead: clusterNames(removed)}
		}
	}
	cs.pending = nil
	cs.drop(append(removed, replaced...))
	return nil
}

// undo ends an Update whose step 1 failed: the readers are given the
// topology they read before (the old one and the clusters still pending)
// and the Clients go back to the old topology, their added clients
// dropped.
func (cs *Clients) undo(ctx context.Context, readers []*user, oldTopo *topology.Topology, oldEntries, fresh []*entry, failed []*user, errs []error) error {
	back, backErrs := updateAll(ctx, readers, widen(oldTopo, cs.pending))
	cs.mu.Lock()
	for _, e := range oldEntries {
		delete(cs.retired, e)
	}
	for _, e := range cs.pending {
		cs.retired[e] = true
	}
	cs.topo, cs.entries, cs.index = oldTopo, oldEntries, indexOf(oldEntries)
	cs.mu.Unlock()
	cs.drop(fresh)
	names := userNames(failed)
	for i, u := range back {
		names = append(names, u.name()+" (moving back)")
		errs = append(errs, backErrs[i])
	}
	return &UpdateError{Step: 1, Failed: names, Errs: errs, Undone: len(backErrs) == 0}
}

// widen returns topo with the clusters of extra after its own: what
// readers read while producers may still write to those.
func widen(topo *topology.Topology, extra []*entry) *topology.Topology {
	if len(extra) == 0 {
		return topo
	}
	wide := &topology.Topology{Clusters: slices.Clone(topo.Clusters)}
	for _, e := range extra {
		wide.Clusters = append(wide.Clusters, e.cl)
	}
	return wide
}

// updateAll applies topo to users in parallel and returns those that
// failed and their errors.
func updateAll(ctx context.Context, users []*user, topo *topology.Topology) (failed []*user, errs []error) {
	all := make([]error, len(users))
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			all[i] = u.Update(ctx, topo)
		}()
	}
	wg.Wait()
	for i, err := range all {
		if err != nil {
			failed = append(failed, users[i])
			errs = append(errs, err)
		}
	}
	return failed, errs
}

// userNames returns the names of users, sorted.
func userNames(users []*user) []string {
	names := make([]string, len(users))
	for i, u := range users {
		names[i] = u.name()
	}
	slices.Sort(names)
	return names
}

func clusterNames(entries []*entry) []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.cl.Name
	}
	return names
}

// drop retires entries: their opening goroutines stop, and their clients
// are closed now, or at their last release.
func (cs *Clients) drop(entries []*entry) {
	var now []pulsar.Client
	cs.mu.Lock()
	for _, e := range entries {
		e.retired = true
		if !isClosed(e.stop) {
			close(e.stop)
		}
		if e.refs == 0 && !cs.closed {
			delete(cs.retired, e)
			if e.client != nil {
				now = append(now, e.client)
			}
		} else {
			cs.retired[e] = true
		}
	}
	cs.mu.Unlock()
	for _, c := range now {
		closeClient(c)
	}
}

// Close closes every producer and consumer still attached (in parallel,
// each within ctx), then every client, and waits for the clients still
// being made (see NewClients). ctx bounds the whole call: when it ends
// first, Close returns the users' errors and one that matches ctx.Err(),
// and what is left finishes closing in the background; the Clients are
// closed for every call after it began either way. It is safe to call
// more than once; later calls return nil at once.
func (cs *Clients) Close(ctx context.Context) error {
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
	var clients []pulsar.Client
	for _, e := range cs.entries {
		clients = append(clients, e.client)
	}
	for e := range cs.retired {
		clients = append(clients, e.client)
	}
	cs.mu.Unlock()
	errs := make([]error, len(users))
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for i, u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = u.Close(ctx)
			}()
		}
		wg.Wait()
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
		cs.bg.Wait() // a client still being made closes itself when it is
	}()
	select {
	case <-done:
		return errors.Join(errs...)
	case <-ctx.Done():
		return fmt.Errorf("keyroute: close: %w", ctx.Err())
	}
}
