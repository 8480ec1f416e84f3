package producer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

func TestBackPressureHonoursCtx(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1, producer.MaxPendingMessages(3))
	for i := 0; i < 3; i++ {
		p.SendAsync(context.Background(), &producer.Message{Key: "k"}, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	gotc := make(chan error, 1)
	start := time.Now()
	p.SendAsync(ctx, &producer.Message{Key: "k"}, func(_ producer.ID, _ *producer.Message, err error) { gotc <- err })
	assert.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond)
	got := <-gotc
	assert.ErrorIs(t, got, context.DeadlineExceeded)
	assert.ErrorIs(t, got, ctx.Err())
	assert.True(t, producer.NotWritten(got))
	_, err := p.Send(ctx, &producer.Message{Key: "k"})
	assert.ErrorIs(t, err, ctx.Err())
	assert.True(t, producer.NotWritten(err))
	// Acks free the space: the next send goes through.
	fake.Cluster("c1").Release()
	_, err = p.Send(context.Background(), &producer.Message{Key: "k"})
	assert.NoError(t, err)
}

func TestMemoryLimitBindsAndAllowsOneOversizeMessage(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1, producer.MemoryLimit(100))
	big := &producer.Message{Key: "k", Value: make([]byte, 500)}
	p.SendAsync(context.Background(), big, nil) // alone: allowed over the limit
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, asyncErr(ctx, p, &producer.Message{Key: "k", Value: []byte("x")}), context.DeadlineExceeded)
	_, bytes := p.Held()
	assert.EqualValues(t, 501, bytes[0])
	fake.Cluster("c1").Partition(0).Ack()
}

func TestFailWhenFullInsteadOfBlocking(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1, producer.MaxPendingMessages(2), producer.BlockWhenFull(false))
	for i := 0; i < 2; i++ {
		p.SendAsync(context.Background(), &producer.Message{Key: "k"}, nil)
	}
	// The held messages are acknowledged only at the end: a Send or
	// SendAsync that waited for space would never return.
	_, err := p.Send(context.Background(), &producer.Message{Key: "k"})
	require.ErrorIs(t, err, producer.ErrBufferFull)
	var se *producer.SendError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "c1", se.Cluster)
	require.ErrorIs(t, asyncErr(context.Background(), p, &producer.Message{Key: "k"}), producer.ErrBufferFull)
	fake.Cluster("c1").Partition(0).Ack()
}
