package consumer

import (
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Retry becomes pulsar-client-go's RetryEnable and retry topic on every
// cluster, with pulsar-client-go's default names, the dead-letter policy
// DeadLetter gives or one of the same count, and a receiver queue for the
// retry topic out of the cluster's share.
func TestRetryOptions(t *testing.T) {
	base := defaultCfg()
	base.topic, base.subscription = "persistent://public/default/orders", "billing"

	c := base
	Retry(RetryPolicy{MaxReconsumes: 3}).apply(&c)
	require.NoError(t, c.validate())
	o, err := consumerOptions(subConfig{cfg: c, cluster: "east", share: 30}, c.topic, 2)
	require.NoError(t, err)
	assert.True(t, o.RetryEnable)
	require.NotNil(t, o.DLQ)
	assert.Equal(t, pulsar.DLQPolicy{MaxDeliveries: 3, DeadLetterTopic: "persistent://public/default/orders-billing-DLQ",
		RetryLetterTopic: "persistent://public/default/orders-billing-RETRY"}, *o.DLQ)
	assert.Equal(t, "persistent://public/default/orders-billing-RETRY", RetryTopic(c.topic, c.subscription))
	assert.Equal(t, 10, o.ReceiverQueueSize, "30 over 2 partitions and the retry topic")
	assert.Equal(t, "persistent://public/default/orders", o.Topic, "pulsar-client-go adds the retry topic itself")
	assert.Empty(t, o.Topics)

	c = base
	DeadLetter(DeadLetterPolicy{MaxDeliveries: 2, Topic: "dead", InitialSubscription: "audit"}).apply(&c)
	Retry(RetryPolicy{MaxReconsumes: 2, Topic: "again"}).apply(&c)
	require.NoError(t, c.validate())
	o, err = consumerOptions(subConfig{cfg: c, cluster: "east", share: 30}, c.topic, 2)
	require.NoError(t, err)
	assert.Equal(t, pulsar.DLQPolicy{MaxDeliveries: 2, DeadLetterTopic: "dead", InitialSubscriptionName: "audit", RetryLetterTopic: "again"}, *o.DLQ)

	o, err = consumerOptions(subConfig{cfg: base, cluster: "east", share: 30}, base.topic, 2)
	require.NoError(t, err)
	assert.False(t, o.RetryEnable)
	assert.Nil(t, o.DLQ)
	assert.Equal(t, 15, o.ReceiverQueueSize)
}

// Bad retry settings are refused at New, naming the problem.
func TestRetryBadOptions(t *testing.T) {
	for name, opts := range map[string][]Opt{
		"no reconsumes":       {Retry(RetryPolicy{})},
		"negative":            {Retry(RetryPolicy{MaxReconsumes: -1})},
		"counts differ":       {Retry(RetryPolicy{MaxReconsumes: 3}), DeadLetter(DeadLetterPolicy{MaxDeliveries: 4})},
		"the topic":           {Retry(RetryPolicy{MaxReconsumes: 1, Topic: "orders"})},
		"the default DLQ":     {Retry(RetryPolicy{MaxReconsumes: 1, Topic: DeadLetterTopic("orders", "billing")})},
		"DeadLetter's topic":  {Retry(RetryPolicy{MaxReconsumes: 1, Topic: "dead"}), DeadLetter(DeadLetterPolicy{MaxDeliveries: 1, Topic: "dead"})},
		"RetryEnable by hand": {ConfigureConsumer(func(_ string, o *pulsar.ConsumerOptions) { o.RetryEnable = true })},
	} {
		c := defaultCfg()
		c.topic, c.subscription = "orders", "billing"
		for _, o := range opts {
			o.apply(&c)
		}
		err := c.validate()
		if err == nil {
			_, err = consumerOptions(subConfig{cfg: c, cluster: "west", share: 10}, c.topic, 1)
		}
		require.ErrorIs(t, err, ErrBadOption, name)
		t.Log(name, ": ", err)
	}
}
