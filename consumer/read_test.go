package consumer

import (
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/crypto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ConfigureConsumer sees keyroute's options for each cluster and may set
// what keyroute does not wrap; changing what the read path relies on is
// refused, naming the field and the cluster.
func TestConfigureConsumer(t *testing.T) {
	c := defaultCfg()
	for _, o := range []Opt{Topic("t"), Subscription("s"), Type(KeyShared), MaxBuffered(100)} {
		o.apply(&c)
	}
	var seen []string
	ConfigureConsumer(func(cluster string, o *pulsar.ConsumerOptions) {
		seen = append(seen, cluster)
		assert.Equal(t, "t", o.Topic)
		assert.Equal(t, pulsar.KeyShared, o.Type)
		assert.Equal(t, 25, o.ReceiverQueueSize, "its share of MaxBuffered over 2 partitions")
		o.Properties = map[string]string{"team": "billing"}
		o.ReadCompacted = true
	}).apply(&c)
	o, err := consumerOptions(subConfig{cfg: c, cluster: "east", share: 50}, "t", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"east"}, seen)
	assert.Equal(t, "billing", o.Properties["team"])
	assert.True(t, o.ReadCompacted)

	for name, fn := range map[string]func(*pulsar.ConsumerOptions){
		"Topic":               func(o *pulsar.ConsumerOptions) { o.Topic = "other" },
		"Topics":              func(o *pulsar.ConsumerOptions) { o.Topics = []string{"a", "b"} },
		"SubscriptionName":    func(o *pulsar.ConsumerOptions) { o.SubscriptionName = "x" },
		"Type":                func(o *pulsar.ConsumerOptions) { o.Type = pulsar.Shared },
		"MessageChannel":      func(o *pulsar.ConsumerOptions) { o.MessageChannel = make(chan pulsar.ConsumerMessage) },
		"AckWithResponse":     func(o *pulsar.ConsumerOptions) { o.AckWithResponse = true },
		"AutoDiscoveryPeriod": func(o *pulsar.ConsumerOptions) { o.AutoDiscoveryPeriod = time.Minute },
	} {
		ConfigureConsumer(func(_ string, o *pulsar.ConsumerOptions) { fn(o) }).apply(&c)
		_, err := consumerOptions(subConfig{cfg: c, cluster: "west", share: 50}, "t", 2)
		require.ErrorIs(t, err, ErrBadOption, name)
		assert.Contains(t, err.Error(), name)
		assert.Contains(t, err.Error(), `"west"`)
	}
}

// Decryption gives each cluster's consumer its own decryption settings,
// with pulsar-client-go's failure action; a missing key reader or an
// unknown action is refused.
func TestDecryptionOptions(t *testing.T) {
	keys := crypto.NewFileKeyReader("pub.pem", "priv.pem")
	c := defaultCfg()
	c.topic, c.subscription = "t", "s"
	Decryption(keys, CryptoDiscard).apply(&c)
	require.NoError(t, c.validate())
	a, err := consumerOptions(subConfig{cfg: c, cluster: "east", share: 10}, "t", 1)
	require.NoError(t, err)
	b, err := consumerOptions(subConfig{cfg: c, cluster: "west", share: 10}, "t", 1)
	require.NoError(t, err)
	require.NotNil(t, a.Decryption)
	assert.NotSame(t, a.Decryption, b.Decryption)
	assert.Equal(t, keys, a.Decryption.KeyReader)
	assert.Equal(t, crypto.ConsumerCryptoFailureActionDiscard, a.Decryption.ConsumerCryptoFailureAction)

	none, err := consumerOptions(subConfig{cfg: defaultCfg(), cluster: "east", share: 10}, "t", 1)
	require.NoError(t, err)
	assert.Nil(t, none.Decryption)

	for _, o := range []Opt{Decryption(nil, CryptoFail), Decryption(keys, CryptoConsume+1)} {
		c := defaultCfg()
		c.topic, c.subscription = "t", "s"
		o.apply(&c)
		assert.ErrorIs(t, c.validate(), ErrBadOption)
	}
}

// DeadLetter becomes pulsar-client-go's DLQPolicy on every cluster, with
// pulsar-client-go's default name when none is given.
func TestDeadLetterOptions(t *testing.T) {
	c := defaultCfg()
	c.topic, c.subscription = "persistent://public/default/orders", "billing"
	DeadLetter(DeadLetterPolicy{MaxDeliveries: 3, InitialSubscription: "audit"}).apply(&c)
	require.NoError(t, c.validate())
	o, err := consumerOptions(subConfig{cfg: c, cluster: "east", share: 10}, "t", 1)
	require.NoError(t, err)
	require.NotNil(t, o.DLQ)
	assert.Equal(t, uint32(3), o.DLQ.MaxDeliveries)
	assert.Equal(t, "persistent://public/default/orders-billing-DLQ", o.DLQ.DeadLetterTopic)
	assert.Equal(t, "audit", o.DLQ.InitialSubscriptionName)

	DeadLetter(DeadLetterPolicy{MaxDeliveries: 1, Topic: "poison"}).apply(&c)
	o, err = consumerOptions(subConfig{cfg: c, cluster: "east", share: 10}, "t", 1)
	require.NoError(t, err)
	assert.Equal(t, "poison", o.DLQ.DeadLetterTopic)

	DeadLetter(DeadLetterPolicy{}).apply(&c)
	assert.ErrorIs(t, c.validate(), ErrBadOption)
}

// pulsar-client-go's own partition discovery never runs: v0.21.0's
// internalTopicSubscribeToPartitions, when one new partition fails to
// subscribe, closes the old partitions' consumers for good
// (apache/pulsar-client-go#1426). The Consumer discovers partitions
// itself (grow.go), at the interval its option gives.
func TestPulsarDiscoveryIsOff(t *testing.T) {
	c := defaultCfg()
	for _, o := range []Opt{Topic("t"), Subscription("s"), PartitionsAutoDiscoveryInterval(time.Second)} {
		o.apply(&c)
	}
	o, err := consumerOptions(subConfig{cfg: c, cluster: "east", share: 50}, "t", 2)
	require.NoError(t, err)
	assert.Equal(t, discoveryOff, o.AutoDiscoveryPeriod)
	assert.Equal(t, time.Second, c.discoverEvery)
	PartitionsAutoDiscoveryInterval(0).apply(&c)
	assert.ErrorIs(t, c.validate(), ErrBadOption)
}
