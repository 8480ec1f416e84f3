package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/consumer/internal/hook"
	"github.com/keyroute/keyroute/topology"
)

// stream is the part of a pulsar-client-go consumer that the Consumer
// uses; pulsar.Consumer has it. Fakes substitute others (see hook.go).
type stream = hook.Stream

// link is an open subscription on one cluster: one stream per partition
// of the topic there, or (whole) one stream over every partition.
type link struct {
	// streams are the partitions' streams by index, or with whole the
	// one stream over every partition. A growth adds streams to the
	// cluster's parts, not here (see cluster.parts).
	streams []stream
	// whole: streams holds one stream over every partition, whose
	// messages' IDs name their partition (a Retry subscription, which
	// pulsar-client-go reads with the retry topic in one consumer, and
	// fakes); a growth then subscribes again over all of them.
	whole       bool
	partitioned bool // the topic is partitioned there (for the admin API)
	// probe makes a broker round trip that reads nothing (a topic
	// lookup), for Health; nil: never probe (always connected).
	probe func() error
	// close releases the connection after the streams are closed.
	close func()
	// backlog, when set, returns the subscription's backlog on the
	// cluster in place of the admin API (fakes).
	backlog func() (int64, error)
	// parts is, with whole, the topic's partition count the stream reads;
	// partitions looks the count up now (nil: never, see grow.go).
	parts      int
	partitions func() (int, error)
	// more subscribes partitions [from, to) at Earliest, a stream each
	// (see grow.go); nil with whole.
	more func(ctx context.Context, from, to int) ([]stream, error)
}

// subConfig is what a connector needs to subscribe on one cluster.
type subConfig struct {
	cfg
	cluster string // the cluster's name
	share   int    // this cluster's share of MaxBuffered
	admin   *admin // the cluster's admin API; nil without one
}

// connector subscribes on one cluster.
type connector interface {
	connect(ctx context.Context, cl topology.Cluster, sc subConfig) (*link, error)
}

// pulsarConnector subscribes with pulsar-client-go.
type pulsarConnector struct{}

func (pulsarConnector) connect(ctx context.Context, cl topology.Cluster, sc subConfig) (*link, error) {
	if sc.requireTopic && sc.admin != nil {
		// Bounded as a pulsar-client-go call is: a stopped broker's
		// admin API accepts the connection and never answers.
		op := cl.Client.OperationTimeout
		if op <= 0 {
			op = defaultOperationTimeout
		}
		actx, cancel := context.WithTimeout(ctx, op)
		err := sc.admin.topicExists(actx, sc.topic)
		cancel()
		if err != nil {
			return nil, clusterErr(cl.Name, "check topic", err)
		}
	}
	var client pulsar.Client
	var err error
	closeClient := func() {}
	if sc.clients != nil {
		client, err = sc.clients.Client(cl.Name)
	} else {
		client, err = keyroute.Open(cl, false, 0, sc.logger, sc.configureClient)
		if err == nil {
			closeClient = client.Close
		}
	}
	if err != nil {
		return nil, clusterErr(cl.Name, "connect", err)
	}
	l, err := subscribe(ctx, client, sc)
	if err != nil {
		closeClient()
		return nil, clusterErr(cl.Name, "subscribe", brokerError(err))
	}
	l.close = closeClient
	return l, nil
}

// subscribe looks the topic's partitions up and subscribes on each, a
// pulsar-client-go consumer per partition topic (the topic itself when
// it is not partitioned); with Retry, one consumer over all of them and
// the retry topic (see link.whole). pulsar-client-go's calls take no ctx:
// they are bounded by the client's operation timeout, and ctx is checked
// between them.
func subscribe(ctx context.Context, client pulsar.Client, sc subConfig) (*link, error) {
	names, err := client.TopicPartitions(sc.topic)
	if err != nil {
		return nil, fmt.Errorf("look up partitions of %q: %w", sc.topic, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	topic := sc.topic
	l := &link{
		partitioned: len(names) > 1 || (len(names) == 1 && strings.Contains(names[0], partitionSuffix)),
		probe: func() error {
			_, err := client.TopicPartitions(topic)
			return err
		},
		parts: len(names),
		partitions: func() (int, error) {
			ps, err := client.TopicPartitions(topic)
			return len(ps), err
		},
	}
	if sc.retry != nil {
		o, err := consumerOptions(sc, sc.topic, len(names))
		if err != nil {
			return nil, err
		}
		if err := atLatestThenEarliest(client, &o); err != nil {
			return nil, err
		}
		pc, err := client.Subscribe(o)
		if err != nil {
			return nil, err
		}
		l.streams, l.whole = []stream{pc}, true
		return l, nil
	}
	if l.streams, err = subscribeEach(client, sc, names, len(names)); err != nil {
		return nil, err
	}
	l.more = func(ctx context.Context, from, to int) ([]stream, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		names := make([]string, to-from)
		for i := range names {
			names[i] = fmt.Sprintf("%s%s%d", topic, partitionSuffix, from+i)
		}
		sc := sc
		sc.position = Earliest // producers may have written there already
		return subscribeEach(client, sc, names, to)
	}
	return l, nil
}

// subscribeEach subscribes on each of the partition topics names (of a
// topic with parts partitions), in parallel; when one fails, it closes the
// others.
func subscribeEach(client pulsar.Client, sc subConfig, names []string, parts int) ([]stream, error) {
	out := make([]stream, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		o, err := consumerOptions(sc, name, parts)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pc, err := client.Subscribe(o)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", name, err)
				return
			}
			out[i] = pc
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range out {
			if s != nil {
				s.Close()
			}
		}
		return nil, err
	}
	return out, nil
}

// consumerOptions returns the pulsar-client-go options of the consumer
// of topic (a partition topic, or the topic) on one cluster whose topic
// has parts partitions, after ConfigureConsumer. It refuses a
// ConfigureConsumer that changed a field keyroute relies on.
func consumerOptions(sc subConfig, topic string, parts int) (pulsar.ConsumerOptions, error) {
	if sc.retry != nil {
		parts++ // the retry topic's (see Retry)
	}
	queue := max(1, sc.share/max(1, parts))
	o := pulsar.ConsumerOptions{
		Topic:                          topic,
		SubscriptionName:               sc.subscription,
		Type:                           subTypes[sc.subType].typ,
		SubscriptionInitialPosition:    pulsar.SubscriptionPositionLatest,
		Name:                           sc.name,
		ReceiverQueueSize:              queue,
		NackRedeliveryDelay:            sc.nackDelay,
		AckWithResponse:                sc.ackWithResponse,
		EnableBatchIndexAcknowledgment: sc.batchIndexAck,
		AckGroupingOptions:             ackGrouping(sc.cfg),
		AutoDiscoveryPeriod:            discoveryOff, // the Consumer's own: see grow.go
		// Small: Receive takes from it directly; the bound on memory is
		// the receiver queues (MaxBuffered).
		MessageChannel: make(chan pulsar.ConsumerMessage, min(queue, 10)),
	}
	if sc.position == Earliest {
		o.SubscriptionInitialPosition = pulsar.SubscriptionPositionEarliest
	}
	if sc.schema != nil {
		o.Schema = sc.schema
	}
	if d := sc.deadLetter; d != nil {
		topic := d.Topic
		if topic == "" {
			topic = DeadLetterTopic(sc.topic, sc.subscription)
		}
		o.DLQ = &pulsar.DLQPolicy{MaxDeliveries: uint32(d.MaxDeliveries), DeadLetterTopic: topic, InitialSubscriptionName: d.InitialSubscription}
	}
	if sc.retry != nil {
		retryOptions(&o, sc.cfg)
	}
	if sc.decryptKeys != nil {
		// A copy per cluster: pulsar-client-go stores the MessageCrypto
		// it makes in the struct it is given.
		o.Decryption = &pulsar.MessageDecryptionInfo{KeyReader: sc.decryptKeys, ConsumerCryptoFailureAction: cryptoActions[sc.cryptoFailure]}
	}
	if sc.configure == nil {
		return o, nil
	}
	want := o
	sc.configure(sc.cluster, &o)
	for _, f := range []struct {
		name    string
		changed bool
	}{
		{"Topic", o.Topic != want.Topic},
		{"Topics", len(o.Topics) != 0},
		{"TopicsPattern", o.TopicsPattern != ""},
		{"SubscriptionName", o.SubscriptionName != want.SubscriptionName},
		{"Type", o.Type != want.Type},
		{"MessageChannel", o.MessageChannel != want.MessageChannel},
		{"AckWithResponse", o.AckWithResponse != want.AckWithResponse},
		{"AutoDiscoveryPeriod", o.AutoDiscoveryPeriod != want.AutoDiscoveryPeriod},
		{"RetryEnable", o.RetryEnable != want.RetryEnable},
	} {
		if f.changed {
			return o, fmt.Errorf("%w: ConfigureConsumer changed %s on cluster %q: set it with keyroute's own option", ErrBadOption, f.name, sc.cluster)
		}
	}
	return o, nil
}

// defaultOperationTimeout is pulsar-client-go's operation timeout when the
// topology gives none.
const defaultOperationTimeout = 30 * time.Second

// partitionSuffix marks the name of one partition of a partitioned topic.
const partitionSuffix = "-partition-"

// ackGrouping maps AckGrouping to pulsar-client-go's options, where a
// MaxSize of 1 or less acknowledges at once.
func ackGrouping(c cfg) *pulsar.AckGroupingOptions {
	if c.ackGroupTime == 0 {
		return &pulsar.AckGroupingOptions{MaxSize: 0}
	}
	return &pulsar.AckGroupingOptions{MaxSize: uint32(c.ackGroupMsgs), MaxTime: c.ackGroupTime}
}
