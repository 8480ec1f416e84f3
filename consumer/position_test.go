package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/topology"
)

// positionAdmin is one fake cluster's admin API for topic t with parts
// partitions: it records subscription creations and cursor resets.
type positionAdmin struct {
	mu        sync.Mutex
	calls     []string // "PUT t-partition-1 {body}", "POST t-partition-1/resetcursor {body}"
	resetFail int      // when set, the status resets are answered with
}

func newPositionAdmin(t *testing.T, parts int) (*positionAdmin, string) {
	a := &positionAdmin{}
	const base = "/admin/v2/persistent/public/default/"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, base)
		if path == "t/partitions" && r.Method == http.MethodGet {
			fmt.Fprintf(w, `{"partitions":%d}`, parts)
			return
		}
		topic, rest, ok := strings.Cut(path, "/subscription/s")
		if !ok {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.calls = append(a.calls, fmt.Sprintf("%s %s%s %s", r.Method, topic, rest, body))
		fail := a.resetFail
		a.mu.Unlock()
		if rest == "/resetcursor" && fail != 0 {
			http.Error(w, "refused", fail)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return a, srv.URL
}

func (a *positionAdmin) log() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

// adminTopo is topo(n) whose clusters have the admin APIs of admins
// (in order; a cluster past them has none), each over parts partitions.
func adminTopo(t *testing.T, n, withAdmin, parts int) (*topology.Topology, []*positionAdmin) {
	tp := topo(n)
	var admins []*positionAdmin
	for i := range withAdmin {
		a, url := newPositionAdmin(t, parts)
		tp.Clusters[i].AdminURL = url
		admins = append(admins, a)
	}
	return tp, admins
}

func pos(cluster string, part int32, ledger, entry int64, batch int32) consumer.ID {
	return consumer.ID{Cluster: cluster, Partition: int(part), Pulsar: pulsar.NewMessageID(ledger, entry, batch, part)}
}

// What a reset asks of the broker: the subscription made at the message
// when missing, then its cursor just after it (excluded), at its batch
// index.
func resetCalls(part int32, ledger, entry int64, batch int32) []string {
	at := fmt.Sprintf(`{"ledgerId":%d,"entryId":%d,"partitionIndex":%d`, ledger, entry, part)
	return []string{
		fmt.Sprintf("PUT t-partition-%d %s}", part, at),
		fmt.Sprintf(`POST t-partition-%d/resetcursor %s,"batchIndex":%d,"excluded":true}`, part, at, batch),
	}
}

func TestParseIDReadsBackString(t *testing.T) {
	for _, id := range []consumer.ID{pos("east", 3, 12, 34, 5), pos("eu/west", 0, 1, 0, -1)} {
		back, err := consumer.ParseID(id.String())
		require.NoError(t, err, id)
		assert.Equal(t, id.Cluster, back.Cluster)
		assert.Equal(t, id.Partition, back.Partition)
		assert.Equal(t, id.Pulsar.String(), back.Pulsar.String())
		assert.Equal(t, id.String(), back.String())

		b, err := json.Marshal(map[string]consumer.ID{"last": id})
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf(`{"last":%q}`, id), string(b))
		var m map[string]consumer.ID
		require.NoError(t, json.Unmarshal(b, &m))
		assert.Equal(t, id.String(), m["last"].String())
	}
	for _, bad := range []string{"", "east", "east/1", "/1/1:2:3", "east/x/1:2:3", "east/1/1:2", "east/1/1:2:x", "east/-"} {
		_, err := consumer.ParseID(bad)
		assert.ErrorIs(t, err, consumer.ErrBadPosition, bad)
	}
	_, err := json.Marshal(consumer.ID{Cluster: "east"})
	assert.ErrorIs(t, err, consumer.ErrBadPosition, "an ID without a Pulsar ID is no position")
}

// StartAfter positions each cluster named before its first subscription
// there, once: a later subscription (here an Update's reconnect) resumes
// from the cursor.
func TestStartAfterPositionsBeforeTheFirstSubscription(t *testing.T) {
	tp, admins := adminTopo(t, 3, 2, 2)
	bed := newFakeBed(8)
	var mu sync.Mutex
	seenAtConnect := map[string][]int{} // the admin calls made when each subscription began
	connect := func(ctx context.Context, cl topology.Cluster, share int) (consumer.Stream, func() error, error) {
		mu.Lock()
		if i, ok := map[string]int{"c1": 0, "c2": 1}[cl.Name]; ok {
			seenAtConnect[cl.Name] = append(seenAtConnect[cl.Name], len(admins[i].log()))
		}
		mu.Unlock()
		return bed.connect(ctx, cl, share)
	}
	ctx := context.Background()
	c, err := consumer.New(ctx, tp, consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(connect),
		consumer.StartAfter(pos("c1", 1, 5, 6, 2), pos("c2", 0, 7, 8, -1)))
	require.NoError(t, err)
	defer c.Close(ctx)
	assert.Equal(t, resetCalls(1, 5, 6, 2), admins[0].log())
	assert.Equal(t, resetCalls(0, 7, 8, -1), admins[1].log())
	mu.Lock()
	assert.Equal(t, map[string][]int{"c1": {2}, "c2": {2}}, seenAtConnect, "positioned before subscribing")
	mu.Unlock()

	old := bed.stream("c1")
	next := *tp
	next.Clusters = append([]topology.Cluster(nil), tp.Clusters...)
	next.Clusters[0].Client.OperationTimeout = 7 * time.Second // a connection setting: c1 is reconnected
	require.NoError(t, c.Update(ctx, &next))
	assert.NotSame(t, old, bed.stream("c1"), "reconnected")
	assert.Equal(t, resetCalls(1, 5, 6, 2), admins[0].log(), "not positioned again")
}

// The ID of a message read through a partition's own pulsar-client-go
// consumer numbers the partition 0 in its Pulsar ID: the cursor moved is
// that of the partition Partition names.
func TestStartAfterMovesThePartitionItNames(t *testing.T) {
	ctx := context.Background()
	tp, admins := adminTopo(t, 2, 1, 2)
	bed := newFakeBed(8)
	id := consumer.ID{Cluster: "c1", Partition: 1, Pulsar: pulsar.NewMessageID(5, 6, -1, 0)}
	c, err := consumer.New(ctx, tp, consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect),
		consumer.StartAfter(id))
	require.NoError(t, err)
	defer c.Close(ctx)
	assert.Equal(t, resetCalls(1, 5, 6, -1), admins[0].log())
}

func TestStartAfterRefusesWhatIsNoPosition(t *testing.T) {
	ctx := context.Background()
	newWith := func(tp *topology.Topology, ids ...consumer.ID) error {
		bed := newFakeBed(8)
		c, err := consumer.New(ctx, tp, consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect),
			consumer.StartAfter(ids...))
		if err == nil {
			_ = c.Close(ctx)
		}
		return err
	}
	tp, admins := adminTopo(t, 2, 1, 2)
	var ce *consumer.ClusterError
	for _, tc := range []struct {
		name    string
		ids     []consumer.ID
		want    error
		cluster string
	}{
		{"cluster not in the topology", []consumer.ID{pos("c9", 0, 1, 1, -1)}, consumer.ErrUnknownCluster, "c9"},
		{"cluster without an admin URL", []consumer.ID{pos("c2", 0, 1, 1, -1)}, consumer.ErrNoAdmin, "c2"},
		{"partition the topic does not have", []consumer.ID{pos("c1", 2, 1, 1, -1)}, consumer.ErrBadPosition, "c1"},
	} {
		err := newWith(tp, tc.ids...)
		require.ErrorIs(t, err, tc.want, tc.name)
		require.ErrorAs(t, err, &ce, tc.name)
		assert.Equal(t, tc.cluster, ce.Cluster, tc.name)
	}
	assert.ErrorContains(t, newWith(tp, pos("c1", 2, 1, 1, -1)), "partition 2")
	for name, ids := range map[string][]consumer.ID{
		"no Pulsar ID": {{Cluster: "c1"}},
		// 0 is a partition consumer's own numbering, any other is the topic's.
		"partition mismatch": {{Cluster: "c1", Partition: 1, Pulsar: pulsar.NewMessageID(1, 1, -1, 2)}},
		"two for one":        {pos("c1", 0, 1, 1, -1), pos("c1", 0, 1, 2, -1)},
	} {
		err := newWith(tp, ids...)
		assert.ErrorIs(t, err, consumer.ErrBadOption, name)
		assert.ErrorIs(t, err, consumer.ErrBadPosition, name)
	}
	assert.Empty(t, admins[0].log(), "nothing moved")
}

// SeekByID closes the subscription of each cluster named, moves its
// cursors and subscribes again; the other clusters are not touched. No
// message of a moved cluster read before the seek is taken after it, and
// a message of another cluster is not lost, whether read with Receive or
// held by Chan's goroutine.
func TestSeekByIDMovesOnlyTheClustersNamed(t *testing.T) {
	for _, viaChan := range []bool{false, true} {
		t.Run(fmt.Sprint("chan=", viaChan), func(t *testing.T) {
			ctx := context.Background()
			tp, admins := adminTopo(t, 2, 2, 2)
			bed := newFakeBed(8)
			c := newConsumerOn(t, bed, tp)
			next := func() *consumer.Message { return receive(t, c) }
			if viaChan {
				next = func() *consumer.Message { return <-c.Chan() }
			}
			old1, s2 := bed.stream("c1"), bed.stream("c2")
			s2.push(0, "keep", "c2")
			if viaChan { // Chan's goroutine takes "keep" and holds it
				_ = c.Chan()
				waitFor(t, func() bool { return len(s2.ch) == 0 })
			}
			for i := range 3 {
				old1.push(1, "old", fmt.Sprint(i))
			}

			require.NoError(t, c.SeekByID(ctx, pos("c1", 1, 5, 6, -1)))
			assert.Equal(t, resetCalls(1, 5, 6, -1), admins[0].log())
			assert.Empty(t, admins[1].log())
			assert.True(t, old1.isClosed(), "the old subscription is closed")
			assert.False(t, s2.isClosed(), "c2 is not touched")
			new1 := bed.stream("c1")
			require.NotSame(t, old1, new1)
			new1.push(1, "new", "c1")

			got := map[string]bool{}
			for len(got) < 2 {
				m := next()
				require.NotEqual(t, "old", m.Key, "a message of c1 read before the seek: %s", m.ID)
				got[m.Key] = true
			}
			assert.Equal(t, map[string]bool{"keep": true, "new": true}, got)
		})
	}
}

// Chan's goroutine drops a message it holds of a cluster the seek moves.
func TestSeekByIDDropsWhatChanHoldsOfTheClusterMoved(t *testing.T) {
	ctx := context.Background()
	tp, _ := adminTopo(t, 2, 2, 2)
	bed := newFakeBed(8)
	c := newConsumerOn(t, bed, tp)
	old1 := bed.stream("c1")
	old1.push(0, "old", "c1")
	_ = c.Chan()
	waitFor(t, func() bool { return len(old1.ch) == 0 })
	require.NoError(t, c.SeekByID(ctx, pos("c1", 0, 1, 1, -1)))
	bed.stream("c1").push(0, "new", "c1")
	assert.Equal(t, "new", (<-c.Chan()).Key)
}

func TestSeekByIDRefusesWhatIsNoPositionAndMovesNothing(t *testing.T) {
	ctx := context.Background()
	tp, admins := adminTopo(t, 3, 1, 2)
	bed := newFakeBed(8)
	c := newConsumerOn(t, bed, tp)
	var ce *consumer.ClusterError
	for _, tc := range []struct {
		name    string
		ids     []consumer.ID
		want    error
		cluster string
	}{
		{"cluster not in the topology", []consumer.ID{pos("c1", 0, 1, 1, -1), pos("c9", 0, 1, 1, -1)}, consumer.ErrUnknownCluster, "c9"},
		{"cluster without an admin URL", []consumer.ID{pos("c1", 0, 1, 1, -1), pos("c3", 0, 1, 1, -1)}, consumer.ErrNoAdmin, "c3"},
		{"partition the topic does not have", []consumer.ID{pos("c1", 7, 1, 1, -1)}, consumer.ErrBadPosition, "c1"},
	} {
		err := c.SeekByID(ctx, tc.ids...)
		require.ErrorIs(t, err, tc.want, tc.name)
		require.ErrorAs(t, err, &ce, tc.name)
		assert.Equal(t, tc.cluster, ce.Cluster, tc.name)
	}
	assert.ErrorIs(t, c.SeekByID(ctx, consumer.ID{Cluster: "c1"}), consumer.ErrBadPosition)
	assert.Empty(t, admins[0].log(), "nothing moved")
	assert.False(t, bed.stream("c1").isClosed())
	require.NoError(t, c.Close(ctx))
	assert.ErrorIs(t, c.SeekByID(ctx, pos("c1", 0, 1, 1, -1)), consumer.ErrClosed)
}

// A Receive waiting on empty clusters when SeekByID begins takes, after
// it, the first message of the new subscription.
func TestSeekByIDWhileReceiveWaits(t *testing.T) {
	tp, _ := adminTopo(t, 2, 2, 2)
	bed := newFakeBed(8)
	c := newConsumerOn(t, bed, tp)
	got := make(chan *consumer.Message, 1)
	go func() { got <- receive(t, c) }()
	require.NoError(t, c.SeekByID(context.Background(), pos("c2", 0, 1, 1, -1)))
	bed.stream("c2").push(0, "new", "after")
	assert.Equal(t, "new", (<-got).Key)
}

// SeekByID names a cluster that is not subscribed, and moves nothing.
func TestSeekByIDNamesAClusterNotSubscribed(t *testing.T) {
	ctx := context.Background()
	tp, admins := adminTopo(t, 2, 2, 2)
	bed := newFakeBed(8)
	bed.failOn["c2"] = notOpen
	c := newConsumerOn(t, bed, tp, consumer.StartTimeout(time.Millisecond), consumer.ProbeInterval(time.Millisecond))
	err := c.SeekByID(ctx, pos("c1", 0, 1, 1, -1), pos("c2", 0, 1, 1, -1))
	require.ErrorIs(t, err, consumer.ErrConnect)
	var ce *consumer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c2", ce.Cluster)
	assert.Empty(t, admins[0].log(), "nothing moved")
}

// A cursor the admin API does not move is named; the cluster is
// subscribed again all the same.
func TestSeekByIDNamesThePartitionNotMoved(t *testing.T) {
	ctx := context.Background()
	tp, admins := adminTopo(t, 1, 1, 2)
	admins[0].resetFail = http.StatusPreconditionFailed
	bed := newFakeBed(8)
	c := newConsumerOn(t, bed, tp)
	old := bed.stream("c1")
	err := c.SeekByID(ctx, pos("c1", 1, 5, 6, -1))
	var ce *consumer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c1", ce.Cluster)
	assert.ErrorContains(t, err, "partition 1 not moved")
	assert.ErrorContains(t, err, "412")
	assert.NotSame(t, old, bed.stream("c1"))
	assert.True(t, healthOf(t, c, "c1").Connected)
}

// newConsumerOn is newConsumer over the topology tp.
func newConsumerOn(t *testing.T, bed *fakeBed, tp *topology.Topology, opts ...consumer.Opt) *consumer.Consumer {
	t.Helper()
	opts = append([]consumer.Opt{consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect)}, opts...)
	c, err := consumer.New(context.Background(), tp, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// batchMsg is a fake message whose ID has a batch index.
type batchMsg struct {
	fakeMsg
	mid pulsar.MessageID
}

func (m *batchMsg) ID() pulsar.MessageID { return m.mid }

func batched(part int32, entry int64, batch int32) pulsar.ConsumerMessage {
	return pulsar.ConsumerMessage{Message: &batchMsg{fakeMsg: fakeMsg{key: "k"}, mid: pulsar.NewMessageID(1, entry, batch, part)}}
}

// The broker starts a position inside a batch at the whole batch: the
// messages of that batch at or before the position are acknowledged and
// not delivered, on that partition only, until its first message after
// the position.
func TestStartAfterInsideABatchSkipsItsStart(t *testing.T) {
	tp, _ := adminTopo(t, 1, 1, 2)
	bed := newFakeBed(16)
	c := newConsumerOn(t, bed, tp, consumer.StartAfter(pos("c1", 1, 1, 5, 2)))
	s := bed.stream("c1")
	for b := range int32(4) {
		s.ch <- batched(1, 5, b)
	}
	s.ch <- batched(0, 5, 0) // another partition, the same entry numbers
	s.ch <- batched(1, 6, -1)
	s.ch <- batched(1, 5, 1) // after the wait ended: delivered
	var got []string
	for range 4 {
		m := receive(t, c)
		got = append(got, fmt.Sprintf("%d:%d:%d", m.ID.Partition, m.ID.Pulsar.EntryID(), m.ID.Pulsar.BatchIdx()))
	}
	assert.Equal(t, []string{"1:5:3", "0:5:0", "1:6:-1", "1:5:1"}, got)
	assert.Equal(t, []string{"ack 1:5", "ack 1:5", "ack 1:5"}, s.log(), "the ones skipped are acknowledged")
}

// A reader that keeps its own place saves, for each cluster and
// partition, the ID of the last message it processed (as text), and a
// new Consumer resumes just after them. Compiled, not run: it needs real
// clusters with admin URLs.
func ExampleStartAfter_clusters() {
	ctx := context.Background()
	topo, err := topology.Load("topology.yaml")
	if err != nil {
		log.Fatal(err)
	}
	var from []consumer.ID
	saved, _ := os.ReadFile("positions.txt") // none yet on the first run
	for _, text := range strings.Fields(string(saved)) {
		id, err := consumer.ParseID(text)
		if err != nil {
			log.Fatal(err)
		}
		from = append(from, id)
	}
	c, err := consumer.New(ctx, topo, consumer.Topic("events"), consumer.Subscription("billing"),
		consumer.InitialPosition(consumer.Earliest), consumer.StartAfter(from...))
	if err != nil {
		log.Fatal(err) // names a cluster without an admin URL, or a partition the topic lacks
	}
	defer c.Close(context.Background())
	last := map[string]string{} // by cluster and partition
	for _, id := range from {
		last[fmt.Sprint(id.Cluster, "/", id.Partition)] = id.String()
	}
	for range 100 {
		m, err := c.Receive(ctx)
		if err != nil {
			log.Fatal(err)
		}
		// ... process m ...
		last[fmt.Sprint(m.ID.Cluster, "/", m.ID.Partition)] = m.ID.String()
		_ = c.Ack(ctx, m)
	}
	var out []string
	for _, text := range last {
		out = append(out, text)
	}
	if err := os.WriteFile("positions.txt", []byte(strings.Join(out, "\n")), 0o600); err != nil {
		log.Fatal(err)
	}
}
