package producer_test

import (
	"context"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/producer"
)

func TestErrorsAreClassifiedAndNamed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		want  error
	}{
		{"too large", pulsar.ErrMessageTooLarge, producer.ErrMessageTooLarge},
		{"timeout", pulsar.ErrSendTimeout, producer.ErrSendTimeout},
		{"closed", pulsar.ErrProducerClosed, producer.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake(3)
			p := newProducer(t, fake, 2)
			c, part := p.Placement("key-1")
			fake.Cluster(c).Partition(part).FailSends(tc.cause)
			_, err := p.Send(context.Background(), &producer.Message{Key: "key-1"})
			assertSendError(t, err, tc.want, tc.cause, c, part)
			var async error
			p.SendAsync(context.Background(), &producer.Message{Key: "key-1"}, func(_ producer.ID, _ *producer.Message, err error) { async = err })
			require.NoError(t, p.Flush(context.Background()))
			assertSendError(t, async, tc.want, tc.cause, c, part)
		})
	}
}

func assertSendError(t *testing.T, err, want, cause error, cluster string, part int) {
	t.Helper()
	require.ErrorIs(t, err, want)
	require.ErrorIs(t, err, cause)
	var se *producer.SendError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "key-1", se.Key)
	assert.Equal(t, cluster, se.Cluster)
	assert.Equal(t, part, se.Partition)
	assert.Contains(t, se.Error(), cluster)
}

func TestNilMessage(t *testing.T) {
	p := newProducer(t, newFake(1), 1)
	_, err := p.Send(context.Background(), nil)
	assert.ErrorIs(t, err, producer.ErrNilMessage)
	var got error
	p.SendAsync(context.Background(), nil, func(_ producer.ID, _ *producer.Message, err error) { got = err })
	assert.ErrorIs(t, got, producer.ErrNilMessage)
}

// The producer reports closed, bad-option and bad-topology conditions with
// the same sentinels as keyroute.Clients (and the consumer), so a caller
// tests one error whichever part reported it.
func TestSharedSentinelsAreKeyroutes(t *testing.T) {
	assert.Equal(t, keyroute.ErrClosed, producer.ErrClosed)
	assert.Equal(t, keyroute.ErrBadOption, producer.ErrBadOption)
	assert.Equal(t, keyroute.ErrBadTopology, producer.ErrBadTopology)
	_, err := producer.New(context.Background(), nil, producer.Topic("t"))
	assert.ErrorIs(t, err, keyroute.ErrBadTopology)
}
