package consumer_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/consumer/consumertest"
)

type order struct {
	ID    string `json:"id"`
	Cents int    `json:"cents"`
}

const orderSchema = `{"type":"record","name":"Order","namespace":"test","fields":[{"name":"id","type":"string"},{"name":"cents","type":"int"}]}`

// Typed decodes values with the Consumer's schema; a value that does not
// decode is an ErrDecode error that still returns the message.
func TestTypedDecodesWithTheSchema(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("east"), consumer.Topic("t"), consumer.Subscription("s"), fake.Opt())
	require.NoError(t, err)
	defer c.Close(context.Background())
	_, err = consumer.NewTyped[order](c)
	require.ErrorIs(t, err, consumer.ErrBadOption, "no schema")

	c2, err := consumer.New(ctx, consumertest.Topology("east"), consumer.Topic("t"), consumer.Subscription("typed"),
		consumer.Schema(pulsar.NewJSONSchema(orderSchema, nil)), fake.Opt())
	require.NoError(t, err)
	defer c2.Close(context.Background())
	typed, err := consumer.NewTyped[order](c2)
	require.NoError(t, err)
	v, _ := json.Marshal(order{ID: "o-1", Cents: 250})
	require.NoError(t, fake.Cluster("east").Publish(0, consumertest.Message{Key: "o-1", Value: v}, consumertest.Message{Key: "bad", Value: []byte("{")}))

	m, got, err := typed.Receive(ctx)
	require.NoError(t, err)
	assert.Equal(t, order{ID: "o-1", Cents: 250}, got)
	assert.Equal(t, "o-1", m.Key)
	m, _, err = typed.Receive(ctx)
	require.ErrorIs(t, err, consumer.ErrDecode)
	require.NotNil(t, m, "the message comes with the error")
	assert.Contains(t, err.Error(), m.ID.String())
	require.NoError(t, c2.Ack(ctx, m))
}

// A string schema decodes into a string (pulsar-client-go's StringSchema
// wants a **string and panics on a *string); a value of a type the
// schema cannot fill is an ErrDecode error, never a panic.
func TestTypedStringAndMismatch(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("east"), consumer.Topic("t"), consumer.Subscription("s"),
		consumer.Schema(pulsar.NewStringSchema(nil)), fake.Opt())
	require.NoError(t, err)
	defer c.Close(ctx)
	require.NoError(t, fake.Cluster("east").Publish(0, consumertest.Message{Key: "k", Value: []byte("hello")}))
	m, err := c.Receive(ctx)
	require.NoError(t, err)
	s, err := consumer.NewTyped[string](c)
	require.NoError(t, err)
	v, err := s.Decode(m)
	require.NoError(t, err)
	assert.Equal(t, "hello", v)
	n, err := consumer.NewTyped[int](c)
	require.NoError(t, err)
	_, err = n.Decode(m)
	assert.ErrorIs(t, err, consumer.ErrDecode)
}
