package consumer

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/crypto"

	"github.com/keyroute/keyroute"
)

// SubscriptionType is how a subscription shares a partition among the
// consumers attached to it, on every cluster (Pulsar's four types).
type SubscriptionType int

// Subscription types. Exclusive is the default, as in Pulsar.
const (
	// Exclusive: one consumer per subscription; a second is refused.
	Exclusive SubscriptionType = iota
	// Failover: one active consumer per partition, others on standby.
	Failover
	// Shared: messages spread over the consumers, no order.
	Shared
	// KeyShared: each key goes to one consumer at a time, in order (see
	// Type for the producer's part).
	KeyShared
)

var subTypes = [...]struct {
	name  string
	typ   pulsar.SubscriptionType
	cumul bool // cumulative acks allowed
}{
	Exclusive: {"exclusive", pulsar.Exclusive, true},
	Failover:  {"failover", pulsar.Failover, true},
	Shared:    {"shared", pulsar.Shared, false},
	KeyShared: {"key_shared", pulsar.KeyShared, false},
}

func (t SubscriptionType) String() string {
	if t >= 0 && int(t) < len(subTypes) {
		return subTypes[t].name
	}
	return fmt.Sprintf("SubscriptionType(%d)", int(t))
}

// Position is where a new subscription starts on a cluster. An existing
// subscription keeps its position.
type Position int

// Positions. Latest is the default, as in Pulsar.
const (
	Latest   Position = iota // only messages published after subscribing
	Earliest                 // every message still stored
)

func (p Position) String() string {
	switch p {
	case Latest:
		return "latest"
	case Earliest:
		return "earliest"
	}
	return fmt.Sprintf("Position(%d)", int(p))
}

// Defaults for options that are not given.
const (
	DefaultMaxBuffered         = 5000
	DefaultNackRedeliveryDelay = time.Minute
	DefaultAckGroupingTime     = 100 * time.Millisecond
	DefaultAckGroupingMessages = 1000
	DefaultProbeInterval       = time.Second
	// DefaultPartitionsAutoDiscoveryInterval is how often each cluster's
	// partition count is looked up when PartitionsAutoDiscoveryInterval is
	// not given.
	DefaultPartitionsAutoDiscoveryInterval = time.Minute
	// DefaultDrainTimeout bounds the drain of a cluster an Update removed
	// when DrainTimeout is not given.
	DefaultDrainTimeout = 5 * time.Minute
)

// cfg is the validated configuration of a Consumer.
type cfg struct {
	topic           string
	topics          []string // Topics, when it names more than one
	topicsSet       bool     // Topics was given
	idTopic         string   // IDs' Topic: the topic when Topics names several, else ""
	subscription    string
	subType         SubscriptionType
	position        Position
	name            string
	maxBuffered     int
	nackDelay       time.Duration
	ackGroupTime    time.Duration
	ackGroupMsgs    int
	ackWithResponse bool
	batchIndexAck   bool
	probeEvery      time.Duration
	startTimeout    time.Duration // valid when startSet; else three ProbeIntervals (see StartTimeout)
	startSet        bool
	startAll        bool          // RequireAllClusters
	discoverEvery   time.Duration // PartitionsAutoDiscoveryInterval
	drainTimeout    time.Duration
	requireTopic    bool
	observer        Observer
	logger          *slog.Logger
	configureClient func(cluster string, o *pulsar.ClientOptions)
	configure       func(cluster string, o *pulsar.ConsumerOptions)
	schema          pulsar.Schema       // nil: none
	deadLetter      *DeadLetterPolicy   // nil: none
	retry           *RetryPolicy        // nil: none (see retry.go)
	decryptKeys     crypto.KeyReader    // nil: no Decryption option
	decryptSet      bool                // Decryption was given
	cryptoFailure   CryptoFailureAction // with decryptKeys
	clients         *keyroute.Clients
	connect         connector
	holdTimeout     time.Duration // see options_hold.go
	maxHeld         int
	startAfter      []ID     // StartAfter
	skip            *skipper // positions inside a batch (position.go)
}

func defaultCfg() cfg {
	return cfg{
		maxBuffered:   DefaultMaxBuffered,
		nackDelay:     DefaultNackRedeliveryDelay,
		ackGroupTime:  DefaultAckGroupingTime,
		ackGroupMsgs:  DefaultAckGroupingMessages,
		probeEvery:    DefaultProbeInterval,
		discoverEvery: DefaultPartitionsAutoDiscoveryInterval,
		drainTimeout:  DefaultDrainTimeout,
		requireTopic:  true,
		connect:       pulsarConnector{},
		holdTimeout:   DefaultHoldTimeout,
		maxHeld:       DefaultMaxHeld,
		skip:          newSkipper(),
	}
}

// validateTopics checks Topic and Topics, and leaves one topic in
// c.topic, or several in c.topics.
func (c *cfg) validateTopics() error {
	if !c.topicsSet {
		return c.checkIDTopics()
	}
	if c.topic != "" {
		return badOption("Topics", c.topics, "Topic is given too: give one of them")
	}
	seen := map[string]bool{}
	for _, t := range c.topics {
		switch {
		case t == "":
			return badOption("Topics", c.topics, "a topic name is empty")
		case seen[t]:
			return badOption("Topics", c.topics, fmt.Sprintf("%q is given twice", t))
		}
		seen[t] = true
	}
	switch {
	case len(c.topics) == 0:
		return ErrNoTopic
	case len(c.topics) == 1:
		c.topic, c.topics = c.topics[0], nil
		return c.checkIDTopics()
	case c.deadLetter != nil && c.deadLetter.Topic != "":
		return badOption("DeadLetter", c.deadLetter.Topic, "one dead-letter topic for several topics: leave Topic empty, and each topic has its own")
	case c.retry != nil && c.retry.Topic != "":
		return badOption("Retry", c.retry.Topic, "one retry topic for several topics: leave Topic empty, and each topic has its own")
	}
	for _, id := range c.startAfter {
		if !seen[id.Topic] {
			return fmt.Errorf("%w: StartAfter(%s): the ID's Topic must be one of Topics %q", ErrBadPosition, id, c.topics)
		}
	}
	return nil
}

// checkIDTopics refuses StartAfter IDs of another topic than the one read.
func (c *cfg) checkIDTopics() error {
	for _, id := range c.startAfter {
		if id.Topic != "" && id.Topic != c.topic {
			return fmt.Errorf("%w: StartAfter(%s): the Consumer reads %q", ErrBadPosition, id, c.topic)
		}
	}
	return nil
}

func (c *cfg) validate() error {
	switch {
	case c.topic == "":
		return ErrNoTopic
	case c.subscription == "":
		return ErrNoSubscription
	case c.subType < Exclusive || c.subType > KeyShared:
		return badOption("Type", c.subType, "unknown subscription type")
	case c.position < Latest || c.position > Earliest:
		return badOption("InitialPosition", c.position, "unknown position")
	case c.maxBuffered < 1:
		return badOption("MaxBuffered", c.maxBuffered, "must be >= 1")
	case c.nackDelay <= 0:
		return badOption("NackRedeliveryDelay", c.nackDelay, "must be > 0")
	case c.ackGroupTime < 0:
		return badOption("AckGrouping", c.ackGroupTime, "time must be >= 0")
	case c.ackGroupMsgs < 0:
		return badOption("AckGrouping", c.ackGroupMsgs, "messages must be >= 0")
	case c.probeEvery <= 0:
		return badOption("ProbeInterval", c.probeEvery, "must be > 0")
	case c.startSet && c.startTimeout <= 0:
		return badOption("StartTimeout", c.startTimeout, "must be > 0")
	case c.discoverEvery <= 0:
		return badOption("PartitionsAutoDiscoveryInterval", c.discoverEvery, "must be > 0")
	case c.drainTimeout <= 0:
		return badOption("DrainTimeout", c.drainTimeout, "must be > 0")
	case c.deadLetter != nil && c.deadLetter.MaxDeliveries < 1:
		return badOption("DeadLetter", c.deadLetter.MaxDeliveries, "MaxDeliveries must be >= 1")
	case c.decryptSet && c.decryptKeys == nil:
		return badOption("Decryption", "nil", "needs a key reader")
	case c.cryptoFailure < CryptoFail || c.cryptoFailure > CryptoConsume:
		return badOption("Decryption", c.cryptoFailure, "unknown failure action")
	case c.clients != nil && c.configureClient != nil:
		return fmt.Errorf("%w: ConfigureClient configures the clients a Consumer opens itself: with WithClients, give it to keyroute.NewClients", ErrBadOption)
	}
	if err := c.validateRetry(); err != nil {
		return err
	}
	return c.validateHold()
}

func badOption(opt string, v any, want string) error {
	return fmt.Errorf("%w: %s(%v): %s", ErrBadOption, opt, v, want)
}

// Opt configures a Consumer.
type Opt interface{ apply(*cfg) }

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

// Topic sets the topic to read on every cluster (required, or Topics),
// e.g. "persistent://public/default/events". Each cluster's partitions
// are found there.
func Topic(name string) Opt { return optFunc(func(c *cfg) { c.topic = name }) }

// Topics sets the topics to read on every cluster, in place of Topic: one
// Consumer reads them all as one stream. Each topic is read as a Consumer
// of that topic alone reads it: per cluster and partition in order, its
// own hand-over of moving keys (as its producer routes it), partition
// growth, dead-letter and retry topics (the default names, one per
// topic), and MaxBuffered split evenly between the topics. Messages carry
// their topic in ID.Topic, which AckID, NackID and SeekByID use to find
// it; Health has a row per topic and cluster. A topic name that is empty
// or given twice, a Topic option besides, or one DeadLetter or Retry
// topic named for all is an ErrBadOption.
//
// Each topic's messages come from a goroutine of its own (as Chan's do),
// so a message costs a goroutine switch more than with one topic, and
// ReceiveInto allocates as Receive does. SeekByTime and SeekByID stop
// every topic's messages while they run; Update updates every topic.
func Topics(names ...string) Opt {
	return optFunc(func(c *cfg) { c.topics, c.topicsSet = slices.Clone(names), true })
}

// Subscription sets the subscription name, the same on every cluster
// (required). Acknowledgements are kept by the brokers under that name, so
// a consumer started again with it resumes where the last one stopped.
func Subscription(name string) Opt { return optFunc(func(c *cfg) { c.subscription = name }) }

// Type sets the subscription type (default Exclusive). While a consumer
// of another type is attached to the subscription on a cluster, the
// broker refuses this one, and New fails with a *ClusterError naming that
// cluster. KeyShared keeps each key on one consumer only for messages the
// producer batched by key (producer.KeyBasedBatching) or did not batch: a
// batch mixing keys goes to one consumer whole.
func Type(t SubscriptionType) Opt { return optFunc(func(c *cfg) { c.subType = t }) }

// InitialPosition sets where a new subscription starts (default Latest) on
// the partitions the topic has on each cluster when New subscribes there.
// A cluster that joins later (see New), one an Update adds, and a
// partition found later (PartitionsAutoDiscoveryInterval) start a new
// subscription at Earliest whatever it says, so that nothing producers
// wrote there before the Consumer subscribed is skipped.
func InitialPosition(p Position) Opt { return optFunc(func(c *cfg) { c.position = p }) }

// Name names this consumer on every cluster (the broker shows it in topic
// stats); default: chosen by the broker.
func Name(name string) Opt { return optFunc(func(c *cfg) { c.name = name }) }

// MaxBuffered bounds the messages received from the brokers and not yet
// taken by Receive or from Chan, over all clusters (default
// DefaultMaxBuffered). It is split evenly over the partitions of every
// cluster as pulsar-client-go's receiver queue (at least one message each),
// so memory is bounded by MaxBuffered times the largest message, plus the
// up to ten messages of each partition's pulsar-client-go consumer channel
// and the one Chan's goroutine holds. The Consumer reads nothing ahead of
// its caller beyond that.
func MaxBuffered(n int) Opt { return optFunc(func(c *cfg) { c.maxBuffered = n }) }

// NackRedeliveryDelay sets how long after a Nack the message comes again
// (default DefaultNackRedeliveryDelay).
func NackRedeliveryDelay(d time.Duration) Opt { return optFunc(func(c *cfg) { c.nackDelay = d }) }

// AckGrouping sets how acknowledgements are batched to the brokers: sent
// when n are waiting or d after the last sending (defaults
// DefaultAckGroupingMessages and DefaultAckGroupingTime). n <= 1 or d = 0
// sends each at once (pulsar-client-go would never send a group left short
// of n with d = 0). A process that dies loses the acknowledgements not yet
// sent: those messages come again. AckWithResponse overrides it.
func AckGrouping(n int, d time.Duration) Opt {
	return optFunc(func(c *cfg) { c.ackGroupMsgs, c.ackGroupTime = n, d })
}

// AckWithResponse makes Ack, AckID and AckCumulative wait until the broker
// has answered the acknowledgement, and return its error (default off:
// they return once the acknowledgement is queued). A message of a batch is
// acknowledged only with its whole batch unless BatchIndexAck is on. With it on, an Ack
// waits for as long as its cluster is unreachable (pulsar-client-go
// v0.21.0 reconnects on the same loop that sends acknowledgements), so
// acknowledge from goroutines of your own, not from the loop that calls
// Receive, or one dead cluster stops the whole stream. Even an answered
// acknowledgement can be lost when the broker dies before persisting it
// (the broker answers first): Pulsar delivers at least once.
func AckWithResponse(on bool) Opt { return optFunc(func(c *cfg) { c.ackWithResponse = on }) }

// BatchIndexAck acknowledges the messages of a batch one by one (default
// off: pulsar-client-go acknowledges a batch once all its messages are, so
// until then an Ack of one of them sends nothing, even under
// AckWithResponse, and a consumer that stops receives the whole batch
// again). It needs the brokers' acknowledgmentAtBatchIndexLevelEnabled
// (off by default in Pulsar 4.0).
func BatchIndexAck(on bool) Opt { return optFunc(func(c *cfg) { c.batchIndexAck = on }) }

// ProbeInterval sets how often each cluster is probed with a topic lookup
// (a broker round trip that reads nothing) for Health's Connected (default
// DefaultProbeInterval). A probe still unanswered after one interval
// counts as not connected.
func ProbeInterval(d time.Duration) Opt { return optFunc(func(c *cfg) { c.probeEvery = d }) }

// StartTimeout bounds how long New waits for a cluster to answer (default
// three ProbeIntervals: 3s with the default ProbeInterval, the producer's
// default too). A cluster not subscribed by then starts down: Health says
// so and why (Connected false, Err), and it joins by itself once it
// answers, tried every ProbeInterval, at Earliest (see New). New returns
// within StartTimeout whenever at least one cluster subscribes; until one
// does, it waits for its ctx. A cluster that answers with an error (a
// topic missing there, the subscription busy) is not down but wrong: New
// fails naming it. Update waits as long for the clusters it adds or
// reconnects. RequireAllClusters turns this off.
func StartTimeout(d time.Duration) Opt {
	return optFunc(func(c *cfg) { c.startTimeout, c.startSet = d, true })
}

// RequireAllClusters makes New wait for every cluster (bounded by its ctx
// and by pulsar-client-go's operation timeout per call) and fail, naming
// each cluster it could not subscribe, unless all of them subscribed
// (default off: see StartTimeout).
func RequireAllClusters(on bool) Opt { return optFunc(func(c *cfg) { c.startAll = on }) }

// PartitionsAutoDiscoveryInterval sets how often the Consumer looks each
// cluster's partition count up (default
// DefaultPartitionsAutoDiscoveryInterval; the role of pulsar-client-go's
// ConsumerOptions.AutoDiscoveryPeriod, which keyroute keeps off). The
// new partitions of a cluster whose topic grew are subscribed, on the
// same subscription, each with a pulsar-client-go consumer of its own at
// Earliest, so that what producers wrote there before they were found is
// read; the old partitions are read on meanwhile and keep their
// consumers, so nothing delivered comes again (Health says Growing until
// the new ones are read). With Retry, whose pulsar-client-go consumer
// reads every partition and the retry topic at once, the cluster is
// subscribed again over all its partitions instead: it is not read for
// the time of that subscribe, and messages delivered and not yet
// acknowledged come again (on an Exclusive subscription whose messages
// were all acknowledged, those that come again anyway, their
// acknowledgement not recorded by the broker, are acknowledged again and
// not delivered). A count below the one subscribed is reported in Health
// (PartitionsErr) and logged; the partitions subscribed are still read.
func PartitionsAutoDiscoveryInterval(d time.Duration) Opt {
	return optFunc(func(c *cfg) { c.discoverEvery = d })
}

// DrainTimeout bounds how long a cluster that an Update removed is still
// read, waiting for its subscription's backlog to reach 0, before it is
// closed anyway (default DefaultDrainTimeout); see Update.
func DrainTimeout(d time.Duration) Opt { return optFunc(func(c *cfg) { c.drainTimeout = d }) }

// RequireTopic makes New check, on every cluster whose topology entry has
// an admin URL, that the topic exists before subscribing (default on): a
// broker that creates topics on first use would otherwise create an empty
// one, and the consumer would wait on it for ever. A cluster without an
// admin URL is not checked.
func RequireTopic(on bool) Opt { return optFunc(func(c *cfg) { c.requireTopic = on }) }

// Observe sets an observer of every message and acknowledgement (see
// Observer); plugin/kotel provides one.
func Observe(o Observer) Opt { return optFunc(func(c *cfg) { c.observer = o }) }

// Logger routes the Consumer's logs (a cluster subscribed, removed,
// drained, its partitions grown) to l, and pulsar-client-go's logs of the
// clients it opens itself, with a "cluster" attribute. Without it, nothing
// is logged. With WithClients, pulsar-client-go's logs go where
// keyroute.Logger sends them.
func Logger(l *slog.Logger) Opt { return optFunc(func(c *cfg) { c.logger = l }) }

// ConfigureClient lets fn adjust each cluster's pulsar-client-go client
// options after keyroute has filled them in from the topology.
func ConfigureClient(fn func(cluster string, o *pulsar.ClientOptions)) Opt {
	return optFunc(func(c *cfg) { c.configureClient = fn })
}

// ConfigureConsumer lets fn adjust each cluster's pulsar-client-go
// consumer options after keyroute has filled them in, for what keyroute
// does not wrap (Properties, SubscriptionProperties, PriorityLevel,
// ReadCompacted, KeySharedPolicy, Interceptors, MaxReconnectToBroker,
// BackOffPolicyFunc, NackBackoffPolicy, chunking limits, ...). fn runs for
// each pulsar-client-go consumer keyroute opens on the cluster, one per
// partition (o.Topic names the partition topic; with Retry, one over the
// topic), each time it subscribes (New, a reconnect, a growth's new
// partitions), on keyroute's goroutines. It must not change Topic,
// Topics, TopicsPattern, SubscriptionName, Type, MessageChannel,
// AckWithResponse, AutoDiscoveryPeriod (see
// PartitionsAutoDiscoveryInterval) or RetryEnable (see Retry), which
// keyroute's read path and acknowledgements rely on: New fails with
// ErrBadOption naming the field and cluster. Options
// it changes that keyroute also sets (ReceiverQueueSize, Name,
// NackRedeliveryDelay, the initial position, acknowledgement grouping)
// take fn's value: MaxBuffered no longer bounds a cluster whose
// ReceiverQueueSize fn raised. Fakes (package consumertest) do not call
// it.
func ConfigureConsumer(fn func(cluster string, o *pulsar.ConsumerOptions)) Opt {
	return optFunc(func(c *cfg) { c.configure = fn })
}

// Schema gives every cluster's consumer a pulsar-client-go schema
// (pulsar.NewStringSchema, NewJSONSchema, NewAvroSchema, NewProtoSchema,
// ...): the broker checks it against the topic's, and New fails, naming
// the cluster, where they are incompatible. Typed decodes Values with it;
// Message.Value stays the encoded bytes.
func Schema(s pulsar.Schema) Opt { return optFunc(func(c *cfg) { c.schema = s }) }

// DeadLetterPolicy says when a message goes to a dead-letter topic, and
// which (see DeadLetter).
type DeadLetterPolicy struct {
	// MaxDeliveries is how many times a message is delivered, at most,
	// before it goes to the dead-letter topic instead (>= 1).
	MaxDeliveries int
	// Topic is the dead-letter topic, the same name on every cluster;
	// default DeadLetterTopic(topic, subscription).
	Topic string
	// InitialSubscription, when set, is a subscription made on the
	// dead-letter topic as it is created, so that what is sent there is
	// kept until it is read (a topic without subscriptions keeps nothing
	// beyond the namespace's retention). Default: none.
	InitialSubscription string
}

// DeadLetterTopic returns the default dead-letter topic of a subscription:
// "<topic>-<subscription>-DLQ", pulsar-client-go's own naming.
func DeadLetterTopic(topic, subscription string) string { return topic + "-" + subscription + "-DLQ" }

// DeadLetter sends a message that was delivered p.MaxDeliveries times
// without being acknowledged (each Nack, or a redelivery after a consumer
// left a Shared or KeyShared subscription, counts) to a dead-letter topic
// instead of delivering it again: pulsar-client-go's DLQPolicy. Each
// cluster's messages go to the dead-letter topic of that cluster (the same
// name on every cluster, the broker creating it on first use), written by
// the cluster's consumer with the message's key, value and properties,
// and are then acknowledged on the subscription. A message dead-lettered
// is not delivered and not counted in Health.
func DeadLetter(p DeadLetterPolicy) Opt { return optFunc(func(c *cfg) { c.deadLetter = &p }) }

// CryptoFailureAction is what a cluster's consumer does with a message it
// cannot decrypt (its key reader cannot read the key the message names, or
// there is no Decryption). The names are pulsar-client-go's
// (crypto.ConsumerCryptoFailureActionFail, Discard, Consume).
type CryptoFailureAction int

// Crypto failure actions.
const (
	// CryptoFail (the default, as in pulsar-client-go): the message is
	// not delivered; pulsar-client-go logs it and nacks it, so it comes
	// again after NackRedeliveryDelay and fails again until a key can
	// read it. It holds up nothing else.
	CryptoFail CryptoFailureAction = iota
	// CryptoDiscard: the message is not delivered, and is acknowledged
	// to the broker as undecryptable: it never comes again.
	CryptoDiscard
	// CryptoConsume: the message is delivered still encrypted: Value is
	// the ciphertext, and Raw().GetEncryptionContext() is not nil.
	CryptoConsume
)

var cryptoActions = [...]int{CryptoFail: crypto.ConsumerCryptoFailureActionFail,
	CryptoDiscard: crypto.ConsumerCryptoFailureActionDiscard, CryptoConsume: crypto.ConsumerCryptoFailureActionConsume}

func (a CryptoFailureAction) String() string {
	switch a {
	case CryptoFail:
		return "fail"
	case CryptoDiscard:
		return "discard"
	case CryptoConsume:
		return "consume"
	}
	return fmt.Sprintf("CryptoFailureAction(%d)", int(a))
}

// Decryption decrypts the messages that keyroute's producer (its
// Encryption option) or any Pulsar producer encrypted end to end:
// keyReader reads the private key each message names
// (crypto.NewFileKeyReader reads PEM files); onFailure says what happens
// to a message that cannot be decrypted. Without Decryption, encrypted
// messages are never delivered (CryptoFail: pulsar-client-go nacks them
// over and over); messages that are not encrypted are delivered either
// way. Each cluster's consumer gets its own copy of the settings.
func Decryption(keyReader crypto.KeyReader, onFailure CryptoFailureAction) Opt {
	return optFunc(func(c *cfg) { c.decryptKeys, c.cryptoFailure, c.decryptSet = keyReader, onFailure, true })
}

// WithClients makes the Consumer subscribe through cs's clients (see
// package keyroute) instead of opening clients of its own: New checks that
// cs was made for the topology it is given (keyroute.ErrOtherTopology).
// Close leaves the clients open; cs.Close closes the Consumer if it is
// still open.
func WithClients(cs *keyroute.Clients) Opt { return optFunc(func(c *cfg) { c.clients = cs }) }

// RetryPolicy says where ReconsumeLater sends a message, and how many
// times (see Retry).
type RetryPolicy struct {
	// MaxReconsumes is how many times ReconsumeLater sends a message to
	// the retry topic (>= 1); the call after the last sends it to the
	// dead-letter topic instead. pulsar-client-go counts a message's
	// unacknowledged deliveries against the same number (it is its
	// DLQPolicy.MaxDeliveries): with DeadLetter as well, MaxReconsumes
	// must equal DeadLetter's MaxDeliveries; without DeadLetter, a
	// message delivered MaxReconsumes times without an acknowledgement
	// (nacked) goes to the dead-letter topic too.
	MaxReconsumes int
	// Topic is the retry topic, the same name on every cluster; default
	// RetryTopic(topic, subscription).
	Topic string
}

// RetryTopic returns the default retry topic of a subscription:
// "<topic>-<subscription>-RETRY", pulsar-client-go's own naming.
func RetryTopic(topic, subscription string) string { return topic + "-" + subscription + "-RETRY" }

// Retry lets ReconsumeLater send a message to a retry topic, to be
// delivered again after a delay: pulsar-client-go's RetryEnable with
// DLQPolicy.RetryLetterTopic. Each cluster's consumer reads the topic and
// that cluster's retry topic (the same name on every cluster), so a
// retried message comes back from the cluster it was read from. The
// retry topic is subscribed at New: it must exist on every cluster, or
// the brokers must create topics on first use (Pulsar's default). Once
// a message was reconsumed MaxReconsumes times, ReconsumeLater sends it
// to its cluster's dead-letter topic: DeadLetter's when given (its Topic
// and InitialSubscription), else DeadLetterTopic(topic, subscription),
// which keeps nothing beyond the namespace's retention until it has a
// subscription.
//
// The delay is the broker's delayed delivery, which applies to Shared
// and KeyShared subscriptions: on Exclusive and Failover ones a retried
// message comes back at once. A retried message is a new message of the
// retry topic: it has no order with the key's other messages, the
// hand-over never holds it (see HoldTimeout), and it is counted in
// Health's Delivered; the backlog Health reports and a drain waits for
// (Update) are the topic's only.
//
// pulsar-client-go reads the two topics through one consumer over both,
// which changes three things: SeekByTime fails (pulsar-client-go does not
// seek a consumer over several topics); an acknowledgement goes to the
// partition consumer that delivered the message, so AckID of an ID
// rebuilt from its bytes fails (and NackID of one does nothing), and so
// does Ack of a message whose subscription was replaced since (a
// reconnect: the message comes again on the new one); and the retry
// topic's receiver queue takes its part of the cluster's share of
// MaxBuffered. New fails with ErrBadOption for MaxReconsumes below 1,
// one that differs from DeadLetter's MaxDeliveries, or a retry topic
// named as the topic or the dead-letter topic.
func Retry(p RetryPolicy) Opt { return optFunc(func(c *cfg) { c.retry = &p }) }

// StartAfter makes New place the subscription, on each partition an ID
// names, just after that message: the first message delivered from that
// cluster and partition is the one after it. Pass the ID (Message.ID) of
// the last message processed on each cluster and partition, saved as
// they were processed (ParseID reads back ID.String), to resume exactly
// after them. Partitions not named start as they would without it: from
// the subscription's cursor, or at InitialPosition for a new one.
//
// Each cluster is positioned once, before its first subscription (at
// New, or when it joins later), over its admin API: every ID's cluster
// must be in the topology and have an AdminURL (a consumertest fake needs
// none: it moves its own cursors), and its partition must be
// one the topic has there; New fails otherwise, naming the cluster and
// partition (ErrUnknownCluster, ErrNoAdmin, ErrBadPosition). The
// subscription is created there when it does not exist. Any other
// consumer attached to the subscription on those partitions is
// disconnected by the broker and resumes from the new position too.
func StartAfter(ids ...ID) Opt {
	return optFunc(func(c *cfg) { c.startAfter = append(c.startAfter, ids...) })
}
