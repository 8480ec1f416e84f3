package kotel

import "github.com/keyroute/keyroute/topology"

// consumerCfg is what NewConsumerObserver builds a ConsumerObserver from.
type consumerCfg struct {
	cfg
	topic        string
	subscription string
	urls         map[string]string // cluster name -> service URL
}

// ConsumerOpt configures a ConsumerObserver: any Opt, or one of the options
// only a ConsumerObserver takes (WithTopic, WithSubscription,
// WithTopology), which New does not accept.
//
// They exist because consumer.Observer's callbacks name the cluster and
// partition of a message but not the topic, the subscription or the
// broker: give them the values given to consumer.New.
type ConsumerOpt interface{ applyConsumer(*consumerCfg) }

type consumerOptFunc func(*consumerCfg)

func (f consumerOptFunc) applyConsumer(c *consumerCfg) { f(c) }

// WithTopic sets the topic the observed Consumer reads (consumer.Topic),
// recorded as messaging.destination.name and in the receive span's name.
// Without it neither is set and the span is named "receive".
func WithTopic(name string) ConsumerOpt {
	return consumerOptFunc(func(c *consumerCfg) { c.topic = name })
}

// WithSubscription sets the subscription name of the observed Consumer
// (consumer.Subscription), recorded as messaging.consumer.group.name.
// Without it the attribute is not set.
func WithSubscription(name string) ConsumerOpt {
	return consumerOptFunc(func(c *consumerCfg) { c.subscription = name })
}

// WithTopology gives the clusters' service URLs, from which server.address
// and server.port are recorded (the first host of the cluster's URL, as
// for the producer). The URLs are read once, by NewConsumerObserver.
// Without it, or for a cluster it does not name, neither attribute is set.
// nil keeps the default.
func WithTopology(t *topology.Topology) ConsumerOpt {
	return consumerOptFunc(func(c *consumerCfg) {
		if t == nil {
			return
		}
		c.urls = make(map[string]string, len(t.Clusters))
		for _, cl := range t.Clusters {
			c.urls[cl.Name] = cl.ServiceURL
		}
	})
}
