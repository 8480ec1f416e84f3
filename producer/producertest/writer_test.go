package producertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A writer's flush returns what pulsar-client-go v0.21.0's returns: the
// error of the last message held when it began (its pendingItem's flush
// callback), and nil when only earlier messages failed.
func TestFlushReturnsTheLastHeldMessagesError(t *testing.T) {
	errLast := errors.New("the last message's error")
	for _, tc := range []struct {
		name string
		fail func(p *Partition) // settles the three messages held
		want error
	}{
		{"all acknowledged", func(p *Partition) { p.Ack() }, nil},
		{"all failed", func(p *Partition) { p.Fail(pulsar.ErrSendTimeout) }, pulsar.ErrSendTimeout},
		{"the last failed", func(p *Partition) { p.c.cs.settleFirst(p.c, []*Partition{p}, 2, 0, nil, false); p.Fail(errLast) }, errLast},
		{"an earlier one failed", func(p *Partition) { p.c.cs.settleFirst(p.c, []*Partition{p}, 2, 0, errLast, false); p.Ack() }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := New()
			c := fake.Cluster("c1")
			c.Hold()
			conn, err := fake.connect(context.Background(), "c1")
			require.NoError(t, err)
			defer conn.Close()
			w := conn.Writers[0]
			defer w.Close()
			for range 3 {
				w.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: "k"}, func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
			}
			flushed := make(chan error, 1)
			go func() { flushed <- w.FlushWithCtx(context.Background()) }()
			part := c.Partition(0)
			require.Eventually(t, func() bool { return part.Flushing() == 1 }, 10*time.Second, time.Millisecond)
			tc.fail(part)
			assert.Equal(t, tc.want, <-flushed)
			assert.Zero(t, part.Flushing())
		})
	}
}
