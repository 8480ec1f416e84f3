package producer_test

import (
	"context"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

func TestSharedClientsCloseTheProducersMadeFromThem(t *testing.T) {
	ctx := context.Background()
	tp := producertest.Topology("east", "west")
	cs, err := keyroute.NewClients(tp)
	require.NoError(t, err)
	fake := producertest.New()
	opts := []producer.Opt{producer.Topic("t"), fake.Opt(), producer.WithClients(cs)}
	a, err := producer.New(ctx, tp, opts...)
	require.NoError(t, err)
	b, err := producer.New(ctx, tp, append(opts, producer.Topic("u"))...)
	require.NoError(t, err)

	other := producertest.Topology("east", "north")
	_, err = producer.New(ctx, other, opts...)
	assert.ErrorIs(t, err, keyroute.ErrOtherTopology)
	assert.ErrorContains(t, err, `"north"`)
	_, err = producer.New(ctx, tp, append(opts, producer.ConfigureClient(func(string, *pulsar.ClientOptions) {}))...)
	assert.ErrorIs(t, err, producer.ErrBadOption, "client settings belong to the shared clients")
	_, err = producer.New(ctx, tp, append(opts, producer.Transactions(true))...)
	assert.ErrorIs(t, err, producer.ErrBadOption, "the clients were made without transactions")

	require.NoError(t, a.Close(ctx))
	_, err = b.Send(ctx, &producer.Message{Key: "k"})
	require.NoError(t, err, "closing one producer leaves the clients to the others")

	require.NoError(t, cs.Close(context.Background()))
	_, err = b.Send(ctx, &producer.Message{Key: "k"})
	assert.ErrorIs(t, err, producer.ErrClosed, "closing the clients closed the producer")
	_, err = producer.New(ctx, tp, opts...)
	assert.ErrorIs(t, err, keyroute.ErrClosed)
}

type order struct {
	ID    int    `json:"id"`
	Items string `json:"items"`
}

func TestTypedEncodesWithTheSchema(t *testing.T) {
	ctx := context.Background()
	fake := producertest.New()
	schema := pulsar.NewJSONSchema(`{"type":"record","name":"order","fields":[{"name":"id","type":"int"},{"name":"items","type":"string"}]}`, nil)
	p, err := producer.New(ctx, producertest.Topology("east"), producer.Topic("t"), fake.Opt(), producer.Schema(schema))
	require.NoError(t, err)
	defer p.Close(ctx)
	typed, err := producer.NewTyped[order](p)
	require.NoError(t, err)
	_, err = typed.Send(ctx, "o-1", order{ID: 1, Items: "tea"})
	require.NoError(t, err)
	got := fake.Cluster("east").Messages()
	require.Len(t, got, 1)
	var back order
	require.NoError(t, schema.Decode(got[0].Value, &back))
	assert.Equal(t, order{ID: 1, Items: "tea"}, back)

	// A value the schema cannot encode is refused, not written, in its turn.
	bad, err := producer.NewTyped[chan int](p)
	require.NoError(t, err)
	_, err = bad.Send(ctx, "o-2", make(chan int))
	assert.ErrorIs(t, err, producer.ErrBadMessage)
	assert.True(t, producer.NotWritten(err))
	assert.Len(t, fake.Cluster("east").Messages(), 1)

	plain, err := producer.New(ctx, producertest.Topology("east"), producer.Topic("t"), fake.Opt())
	require.NoError(t, err)
	defer plain.Close(ctx)
	_, err = producer.NewTyped[order](plain)
	assert.ErrorIs(t, err, producer.ErrBadOption, "no schema")
}
