package producer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/internal/hook"
	"github.com/keyroute/keyroute/producer/producertest"
	"github.com/keyroute/keyroute/topology"
)

// The tests run the Producer over producertest's fake clusters c1, c2, ...

func topo(n int) *topology.Topology {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i+1)
	}
	return producertest.Topology(names...)
}

// newFake returns fake clusters of parts partitions each.
func newFake(parts int) *producertest.Clusters {
	return producertest.New(producertest.Partitions(parts))
}

// newProducer opens a Producer on the first n clusters of fake, closed at
// the end of the test.
func newProducer(t *testing.T, fake *producertest.Clusters, clusters int, opts ...producer.Opt) *producer.Producer {
	t.Helper()
	opts = append([]producer.Opt{producer.Topic("t"), fake.Opt()}, opts...)
	p, err := producer.New(context.Background(), topo(clusters), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// newTxnProducer is newProducer with transactions on and no transaction
// begun ahead (TxnPrebegin(0)), so that the fake's events are a commit's
// alone; opts may turn the pool on.
func newTxnProducer(t *testing.T, fake *producertest.Clusters, clusters int, opts ...producer.Opt) *producer.Producer {
	t.Helper()
	return newProducer(t, fake, clusters, append([]producer.Opt{producer.Transactions(true), producer.TxnPrebegin(0)}, opts...)...)
}

// txnKeysOn returns n distinct keys that route to cluster.
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

// count returns how many events of op happened on cluster ("": on any).
func count(fake *producertest.Clusters, op producertest.Op, cluster string) int {
	n := 0
	for _, e := range fake.Events() {
		if e.Op == op && (cluster == "" || e.Cluster == cluster) {
			n++
		}
	}
	return n
}

// visible returns the keys a consumer would read per cluster of p and
// partition, in write order; clusters and partitions with none are left
// out.
func visible(fake *producertest.Clusters, p *producer.Producer) map[string]map[int][]string {
	out := map[string]map[int][]string{}
	for _, c := range p.Clusters() {
		for _, m := range fake.Cluster(c).Messages() {
			if out[c] == nil {
				out[c] = map[int][]string{}
			}
			out[c][m.Partition] = append(out[c][m.Partition], m.Key)
		}
	}
	return out
}

// rawWriter opens a writer of fake's on partition 0 of c1 without a
// Producer, closed at the end of the test: the path that the Producer's
// costs are compared with.
func rawWriter(tb testing.TB, fake *producertest.Clusters) hook.Writer {
	tb.Helper()
	return rawWriters(tb, fake)[0]
}

// rawWriters is rawWriter for every partition of c1.
func rawWriters(tb testing.TB, fake *producertest.Clusters) []hook.Writer {
	tb.Helper()
	conn, err := producer.FakeConnect(fake.Opt())(context.Background(), "c1")
	require.NoError(tb, err)
	tb.Cleanup(func() {
		for _, w := range conn.Writers {
			w.Close()
		}
		conn.Close()
	})
	return conn.Writers
}

// TestFakeSendAsyncDoesNotWaitForCallbacks pins what
// BenchmarkSendAsyncOverhead relies on: with AsyncAcks, a sender is not
// held up while the writer's goroutine runs the callbacks of a batch, as a
// pulsar-client-go sender is not held up by its connection's goroutine.
// (When it was, a heavier callback, the Producer's, slowed its own
// senders.) The bound only keeps a failing run from hanging: the send
// that fails it never returns at all.
func TestFakeSendAsyncDoesNotWaitForCallbacks(t *testing.T) {
	w := rawWriter(t, producertest.New(producertest.AsyncAcks(1)))
	inCallback, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	w.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: "a"}, func(pulsar.MessageID, *pulsar.ProducerMessage, error) {
		close(inCallback)
		<-release
	})
	<-inCallback // the writer's goroutine is in a's callback
	go func() {
		w.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: "b"}, func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
		close(returned)
	}()
	select {
	case <-returned:
		close(release)
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("SendAsync waited for the callback the writer's goroutine was running")
	}
}
