package producer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

func TestCancelledCtxFailsAtHandOver(t *testing.T) {
	fake := newFake(2)
	p := newProducer(t, fake, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Send(ctx, &producer.Message{Key: "k"})
	require.ErrorIs(t, err, context.Canceled)
	var se *producer.SendError
	require.ErrorAs(t, err, &se)
	c, part := p.Placement("k")
	assert.Equal(t, c, se.Cluster)
	assert.Equal(t, part, se.Partition)
	got := make(chan error, 1)
	p.SendAsync(ctx, &producer.Message{Key: "k"}, func(_ producer.ID, _ *producer.Message, err error) { got <- err })
	require.ErrorIs(t, <-got, context.Canceled)
	assert.Empty(t, fake.Cluster(c).Partition(part).Keys(), "nothing reached the writer")
}

func TestOddKeysRouteLikeAnyOther(t *testing.T) {
	fake := newFake(4)
	p := newProducer(t, fake, 5)
	for _, key := range []string{
		"\xff\xfe\x00binary",       // not UTF-8, with a NUL
		strings.Repeat("k", 1<<20), // 1 MiB
		"ключ-日本",                  // multibyte UTF-8
	} {
		id, err := p.Send(context.Background(), &producer.Message{Key: key}) // nil Value: empty payload
		require.NoError(t, err)
		c, part := p.Placement(key)
		assert.Equal(t, c, id.Cluster)
		assert.Equal(t, part, id.Partition)
		got := fake.Cluster(c).Partition(part).Keys()
		assert.Equal(t, key, got[len(got)-1], "the key reaches the writer byte for byte")
	}
}
