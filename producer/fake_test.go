package producer_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// fakeID is a pulsar.MessageID for fake writers. A zero size means not
// batched, as pulsar-client-go reports it.
type fakeID struct {
	pulsar.MessageID
	seq       int64
	idx, size int32 // place in its batch, and the batch's size
}

func (f fakeID) LedgerID() int64  { return 1 }
func (f fakeID) EntryID() int64   { return f.seq }
func (f fakeID) BatchIdx() int32  { return f.idx }
func (f fakeID) BatchSize() int32 { return f.size }

type mode int

const (
	ackInline mode = iota // ack inside SendAsync, like a reader goroutine racing it
	ackManual             // hold until ack() is called
)

// fakeWriter records messages in the order they were handed over and acks
// them per its mode. Close drops unacked messages without a callback, as
// pulsar-client-go does with messages still in a batch.
type fakeWriter struct {
	cluster string
	part    int
	mode    mode
	failErr error // when set, every message fails with it

	mu      sync.Mutex
	log     []string // keys in hand-over order
	values  [][]byte
	pending []pendingAck
	seq     int64
	closed  bool
}

type pendingAck struct {
	pm *pulsar.ProducerMessage
	cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)
}

func (w *fakeWriter) record(pm *pulsar.ProducerMessage) fakeID {
	w.log = append(w.log, pm.Key)
	w.values = append(w.values, pm.Payload)
	w.seq++
	return fakeID{seq: w.seq}
}

func (w *fakeWriter) Send(ctx context.Context, pm *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, pulsar.ErrProducerClosed
	}
	if w.failErr != nil {
		return nil, w.failErr
	}
	return w.record(pm), nil
}

func (w *fakeWriter) SendAsync(ctx context.Context, pm *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		cb(nil, pm, pulsar.ErrProducerClosed)
		return
	}
	if w.failErr != nil {
		w.mu.Unlock()
		cb(nil, pm, w.failErr)
		return
	}
	id := w.record(pm)
	if w.mode == ackManual {
		w.pending = append(w.pending, pendingAck{pm, cb})
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	cb(id, pm, nil)
}

// ack acknowledges every held message, in order, as one batch.
func (w *fakeWriter) ack() { w.ackBatch(0) }

// ackBatch acknowledges every held message, in order, as one batch that
// has missing more messages than are held, so that the batch's end is never
// reported.
func (w *fakeWriter) ackBatch(missing int) {
	w.mu.Lock()
	p := w.pending
	w.pending = nil
	w.mu.Unlock()
	for i, a := range p {
		a.cb(fakeID{seq: 1, idx: int32(i), size: int32(len(p) + missing)}, a.pm, nil)
	}
}

// FlushWithCtx waits, as pulsar-client-go's does, until every message
// handed over has its outcome, or ctx ends.
func (w *fakeWriter) FlushWithCtx(ctx context.Context) error {
	for {
		w.mu.Lock()
		held := len(w.pending)
		w.mu.Unlock()
		if held == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// fail fails every held message with err, in order (as a send timeout
// does).
func (w *fakeWriter) fail(err error) {
	w.mu.Lock()
	p := w.pending
	w.pending = nil
	w.mu.Unlock()
	for _, a := range p {
		a.cb(nil, a.pm, err)
	}
}

// auto acks the held messages and every later one at once.
func (w *fakeWriter) auto() {
	w.mu.Lock()
	w.mode = ackInline
	w.mu.Unlock()
	w.ack()
}

func (w *fakeWriter) Close() {
	w.mu.Lock()
	w.closed = true
	w.pending = nil // dropped without callbacks
	w.mu.Unlock()
}

func (w *fakeWriter) keys() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.log...)
}

// fakeBed is a set of fake clusters.
type fakeBed struct {
	mu      sync.Mutex
	writers map[string][]*fakeWriter
	modes   map[string]mode
	parts   int
	failOn  map[string]error // connect errors by cluster
	probes  map[string]error // probe errors by cluster (nil: the probe succeeds)
	probed  map[string]int   // probes made, by cluster
}

func newFakeBed(parts int) *fakeBed {
	return &fakeBed{writers: map[string][]*fakeWriter{}, modes: map[string]mode{}, parts: parts,
		failOn: map[string]error{}, probes: map[string]error{}, probed: map[string]int{}}
}

func (b *fakeBed) connect(ctx context.Context, cl topology.Cluster, _ int) ([]producer.Writer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.failOn[cl.Name]; err != nil {
		return nil, err
	}
	ws := make([]producer.Writer, b.parts)
	fws := make([]*fakeWriter, b.parts)
	for i := range ws {
		fws[i] = &fakeWriter{cluster: cl.Name, part: i, mode: b.modes[cl.Name]}
		ws[i] = fws[i]
	}
	b.writers[cl.Name] = fws
	return ws, nil
}

// probe is the connector's probe of a cluster.
func (b *fakeBed) probe(cluster string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probed[cluster]++
	return b.probes[cluster]
}

func (b *fakeBed) setProbe(cluster string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probes[cluster] = err
}

func (b *fakeBed) writer(cluster string, part int) *fakeWriter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.writers[cluster][part]
}

func topo(n int) *topology.Topology {
	t := &topology.Topology{}
	for i := 1; i <= n; i++ {
		t.Clusters = append(t.Clusters, topology.Cluster{
			Name:       fmt.Sprintf("c%d", i),
			ServiceURL: fmt.Sprintf("pulsar://127.0.0.1:%d", 6650+i),
			Weight:     1,
		})
	}
	return t
}
