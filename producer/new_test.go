package producer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

func TestNewRejectsBadInput(t *testing.T) {
	fake := newFake(1)
	ctx := context.Background()
	_, err := producer.New(ctx, topo(2), fake.Opt())
	assert.ErrorIs(t, err, producer.ErrNoTopic)
	for _, o := range []producer.Opt{
		producer.BatchMaxMessages(0), producer.BatchMaxBytes(-1), producer.Linger(0),
		producer.MaxPendingMessages(0), producer.MemoryLimit(0), producer.SendTimeout(-time.Second),
		producer.MaxPendingMessages(producer.MaxPendingLimit + 1), producer.MemoryLimit(producer.MemoryLimitMax + 1),
		producer.Compression(producer.Codec(42)),
	} {
		_, err := producer.New(ctx, topo(2), producer.Topic("t"), fake.Opt(), o)
		assert.ErrorIs(t, err, producer.ErrBadOption)
	}
	_, err = producer.New(ctx, nil, producer.Topic("t"))
	assert.ErrorIs(t, err, producer.ErrBadTopology)
	bad := topo(2)
	bad.Clusters[1].Name = bad.Clusters[0].Name
	_, err = producer.New(ctx, bad, producer.Topic("t"), fake.Opt())
	assert.ErrorIs(t, err, producer.ErrBadTopology)
}

func TestNewNamesEveryClusterThatFailedToConnect(t *testing.T) {
	fake := newFake(1)
	boom := errors.New("connection refused")
	fake.Cluster("c2").FailConnect(boom)
	fake.Cluster("c4").FailConnect(boom)
	_, err := producer.New(context.Background(), topo(5), producer.Topic("t"), fake.Opt())
	require.ErrorIs(t, err, producer.ErrConnect)
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), `"c2"`)
	assert.Contains(t, err.Error(), `"c4"`)
	assert.NotContains(t, err.Error(), `"c1"`)
	var ce *producer.ClusterError
	require.ErrorAs(t, err, &ce)
	// The clusters that did connect were closed again.
	for _, name := range []string{"c1", "c3", "c5"} {
		assert.Equal(t, 1, fake.Cluster(name).Connects(), name)
		assert.Zero(t, fake.Cluster(name).Writers(), name)
	}
}

func TestParseCodec(t *testing.T) {
	for _, c := range []producer.Codec{producer.LZ4, producer.NoCompression, producer.ZLib, producer.ZSTD} {
		got, err := producer.ParseCodec(c.String())
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	_, err := producer.ParseCodec("snappy")
	assert.ErrorIs(t, err, producer.ErrBadOption)
}

func TestLoggerGetsConnectAndCloseLines(t *testing.T) {
	var buf syncBuffer
	fake := newFake(2)
	fake.Cluster("c2").Hold()
	p, err := producer.New(context.Background(), topo(2), producer.Topic("t"), fake.Opt(),
		producer.Logger(slog.New(slog.NewTextHandler(&buf, nil))))
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		p.SendAsync(context.Background(), &producer.Message{Key: fmt.Sprint(i)}, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_ = p.Close(ctx)
	out := buf.String()
	assert.Contains(t, out, `cluster connected" cluster=c1 topic=t partitions=2`)
	assert.Contains(t, out, `messages failed at close" cluster=c2`)
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
