package producer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// txnEvent is one thing that happened on a fake cluster, in global order.
type txnEvent struct {
	op      string // begin, send, ack, sendfail, commit, abort, commitfail, abortfail
	cluster string
	txn     uint64 // fake transaction id; 0 for none
	key     string
	part    int
	n       int               // for commit/abort: messages acked in the transaction
	props   map[string]string // for send: the message's properties
}

func (e txnEvent) String() string {
	return fmt.Sprintf("%s %s#%d %s/%d n=%d", e.op, e.cluster, e.txn, e.key, e.part, e.n)
}

// sendFault makes the send number `at` (0-based, counted per cluster) fail.
type sendFault struct {
	at  int
	err error
}

// txnBed is a set of fake clusters with fake transactions. All state is
// guarded by mu, fake transactions' included.
type txnBed struct {
	mu     sync.Mutex
	parts  int
	events []txnEvent
	nextID uint64
	txns   map[uint64]*fakeTxn
	sends  map[string]int

	// Fault injection, by cluster; set before the producer is used.
	beginErrs map[string][]error // successive begins fail with these (nil entry: success)
	sendFail  map[string]sendFault
	commitErr map[string]error
	hold      map[string]bool          // hold acks until release
	noTxn     map[string]bool          // transactions off
	hang      map[string]chan struct{} // commits block until the channel is closed
	beginHang map[string]chan struct{} // begins block until the channel is closed

	held map[string][]func()
	gone map[string]chan struct{} // closed when the cluster's client closes
}

// errClientClosed is what a fake transaction call in flight returns when
// its client closes, as pulsar-client-go fails the requests in flight on
// a closed connection.
var errClientClosed = errors.New("fake: client closed")

// goneLocked returns the channel closed when cluster's client closes.
func (b *txnBed) goneLocked(cluster string) chan struct{} {
	if b.gone[cluster] == nil {
		b.gone[cluster] = make(chan struct{})
	}
	return b.gone[cluster]
}

// clientClosed is the connector's close of a cluster's client.
func (b *txnBed) clientClosed(cluster string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.goneLocked(cluster))
}

func newTxnBed(parts int) *txnBed {
	return &txnBed{
		parts: parts, txns: map[uint64]*fakeTxn{}, sends: map[string]int{},
		beginErrs: map[string][]error{}, sendFail: map[string]sendFault{}, commitErr: map[string]error{},
		hold: map[string]bool{}, noTxn: map[string]bool{}, held: map[string][]func(){}, hang: map[string]chan struct{}{}, beginHang: map[string]chan struct{}{},
		gone: map[string]chan struct{}{},
	}
}

func (b *txnBed) connect(_ context.Context, cl topology.Cluster) ([]producer.Writer, producer.NewTxnFunc, error) {
	ws := make([]producer.Writer, b.parts)
	for i := range ws {
		ws[i] = &txnWriter{bed: b, cluster: cl.Name, part: i}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.noTxn[cl.Name] {
		return ws, nil, nil
	}
	name := cl.Name
	return ws, func(time.Duration) (pulsar.Transaction, error) { return b.begin(name) }, nil
}

func (b *txnBed) begin(cluster string) (pulsar.Transaction, error) {
	b.mu.Lock()
	hang, gone := b.beginHang[cluster], b.goneLocked(cluster)
	b.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-gone:
			return nil, errClientClosed
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if errs := b.beginErrs[cluster]; len(errs) > 0 {
		b.beginErrs[cluster] = errs[1:]
		if errs[0] != nil {
			b.events = append(b.events, txnEvent{op: "beginfail", cluster: cluster})
			return nil, errs[0]
		}
	}
	b.nextID++
	t := &fakeTxn{bed: b, cluster: cluster, id: b.nextID, state: pulsar.TxnOpen}
	b.txns[t.id] = t
	b.events = append(b.events, txnEvent{op: "begin", cluster: cluster, txn: t.id})
	return t, nil
}

// release acks every held message of cluster, in order, and stops holding.
func (b *txnBed) release(cluster string) {
	b.mu.Lock()
	fs := b.held[cluster]
	b.held[cluster] = nil
	b.hold[cluster] = false
	b.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func (b *txnBed) log() []txnEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]txnEvent(nil), b.events...)
}

func (b *txnBed) count(op, cluster string) int {
	n := 0
	for _, e := range b.log() {
		if e.op == op && (cluster == "" || e.cluster == cluster) {
			n++
		}
	}
	return n
}

// visible returns the keys a consumer would see per cluster and partition:
// the acked messages of committed transactions, in write order (this fake
// has no #1498: aborted transactions show nothing).
func (b *txnBed) visible() map[string]map[int][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]map[int][]string{}
	for _, e := range b.events {
		if e.op != "ack" || b.txns[e.txn].state != pulsar.TxnCommitted {
			continue
		}
		if out[e.cluster] == nil {
			out[e.cluster] = map[int][]string{}
		}
		out[e.cluster][e.part] = append(out[e.cluster][e.part], e.key)
	}
	return out
}

// fakeTxn is a fake Pulsar transaction; its state is guarded by bed.mu.
type fakeTxn struct {
	bed     *txnBed
	cluster string
	id      uint64
	state   pulsar.TxnState
	acked   int
}

var errFakeState = errors.New("fake: transaction not open")

func (t *fakeTxn) Commit(context.Context) error {
	b := t.bed
	b.mu.Lock()
	hang, gone := b.hang[t.cluster], b.goneLocked(t.cluster)
	b.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-gone:
			return errClientClosed
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.state != pulsar.TxnOpen {
		return errFakeState
	}
	if err := b.commitErr[t.cluster]; err != nil {
		b.events = append(b.events, txnEvent{op: "commitfail", cluster: t.cluster, txn: t.id, n: t.acked})
		return err
	}
	t.state = pulsar.TxnCommitted
	b.events = append(b.events, txnEvent{op: "commit", cluster: t.cluster, txn: t.id, n: t.acked})
	return nil
}

func (t *fakeTxn) Abort(context.Context) error {
	b := t.bed
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.state != pulsar.TxnOpen {
		b.events = append(b.events, txnEvent{op: "abortfail", cluster: t.cluster, txn: t.id})
		return errFakeState
	}
	t.state = pulsar.TxnAborted
	b.events = append(b.events, txnEvent{op: "abort", cluster: t.cluster, txn: t.id, n: t.acked})
	return nil
}

func (t *fakeTxn) GetState() pulsar.TxnState {
	t.bed.mu.Lock()
	defer t.bed.mu.Unlock()
	return t.state
}

func (t *fakeTxn) GetTxnID() pulsar.TxnID { return pulsar.TxnID{LeastSigBits: t.id} }

// txnWriter is a fake partition writer that logs transactional sends.
type txnWriter struct {
	bed     *txnBed
	cluster string
	part    int
	seq     int64 // guarded by bed.mu
}

func (w *txnWriter) Send(ctx context.Context, pm *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	ch := make(chan error, 1)
	var id pulsar.MessageID
	w.SendAsync(ctx, pm, func(mid pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		id = mid
		ch <- err
	})
	err := <-ch
	return id, err
}

func (w *txnWriter) SendAsync(_ context.Context, pm *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	b := w.bed
	b.mu.Lock()
	n := b.sends[w.cluster]
	b.sends[w.cluster]++
	var txn *fakeTxn
	var tid uint64
	if pm.Transaction != nil {
		txn = pm.Transaction.(*fakeTxn)
		tid = txn.id
		if !pm.DeliverAt.Equal(producer.SendAlone) {
			panic("transactional message without DeliverAt = SendAlone")
		}
	}
	if f, ok := b.sendFail[w.cluster]; ok && f.at == n {
		b.events = append(b.events, txnEvent{op: "sendfail", cluster: w.cluster, txn: tid, key: pm.Key, part: w.part})
		b.mu.Unlock()
		cb(nil, pm, f.err)
		return
	}
	b.events = append(b.events, txnEvent{op: "send", cluster: w.cluster, txn: tid, key: pm.Key, part: w.part, props: pm.Properties})
	w.seq++
	id := fakeID{seq: w.seq}
	ack := func() {
		b.mu.Lock()
		b.events = append(b.events, txnEvent{op: "ack", cluster: w.cluster, txn: tid, key: pm.Key, part: w.part})
		if txn != nil {
			txn.acked++
		}
		b.mu.Unlock()
		cb(id, pm, nil)
	}
	if b.hold[w.cluster] {
		b.held[w.cluster] = append(b.held[w.cluster], ack)
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	ack()
}

func (w *txnWriter) FlushWithCtx(context.Context) error { return nil }
func (w *txnWriter) Close()                             {}

func newTxnProducer(t *testing.T, bed *txnBed, clusters int, opts ...producer.Opt) *producer.Producer {
	t.Helper()
	opts = append([]producer.Opt{producer.Topic("t"), producer.WithTxnConnector(bed.connect, bed.clientClosed), producer.Transactions(true)}, opts...)
	p, err := producer.New(context.Background(), topo(clusters), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// keysOn returns n distinct keys that route to cluster.
func txnKeysOn(p *producer.Producer, cluster string, n int) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprintf("k%d", i)
		if c, _ := p.Placement(k); c == cluster {
			keys = append(keys, k)
		}
	}
	return keys
}
