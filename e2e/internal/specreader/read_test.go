package specreader

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/require"
)

// fakeConsumer gives the messages sent on msgs to Receive, and counts the
// calls.
type fakeConsumer struct {
	pulsar.Consumer
	msgs  chan pulsar.Message
	calls atomic.Int32
}

func (c *fakeConsumer) Receive(ctx context.Context) (pulsar.Message, error) {
	c.calls.Add(1)
	select {
	case m := <-c.msgs:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestStoppedPartitionIsNotReceivedFrom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, 1, "A", "B")
		c := &fakeConsumer{msgs: make(chan pulsar.Message)}
		b.r.wg.Add(1)
		go b.r.read(partKey{"B", 0}, c)
		origin := at("A", 0, 1)
		c.msgs <- fakeMsg{id: fakeID{ledger: 7, entry: 1}, key: "k", props: moved(origin)}
		synctest.Wait()
		require.True(t, b.stopped("B", 0))
		require.Equal(t, int32(1), c.calls.Load(), "no message is taken from a stopped partition")

		b.put("A", 0, "x", nil) // the origin passes: B/0 holds nothing
		synctest.Wait()
		require.Equal(t, []string{"A/0/1 x", "B/0/1 k"}, b.got)
		require.Equal(t, int32(2), c.calls.Load(), "read again")
		c.msgs <- fakeMsg{id: fakeID{ledger: 7, entry: 2}, key: "k"}
		synctest.Wait()
		require.Equal(t, "B/0/2 k", b.got[2])
		b.r.cancel()
		b.r.wg.Wait()
	})
}
