// Every option of the package is in this file, so that a reader finds
// them in one place; that makes it longer than the ~400 lines the other
// files keep to.

package producer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/crypto"

	"github.com/keyroute/keyroute"
)

// Codec is a Pulsar compression codec.
type Codec int

// Codecs. LZ4 is the default.
const (
	LZ4 Codec = iota
	NoCompression
	ZLib
	ZSTD
)

func (c Codec) String() string {
	switch c {
	case LZ4:
		return "lz4"
	case NoCompression:
		return "none"
	case ZLib:
		return "zlib"
	case ZSTD:
		return "zstd"
	}
	return fmt.Sprintf("Codec(%d)", int(c))
}

// ParseCodec parses "lz4", "none", "zlib" or "zstd".
func ParseCodec(s string) (Codec, error) {
	for _, c := range []Codec{LZ4, NoCompression, ZLib, ZSTD} {
		if c.String() == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown codec %q (want lz4, none, zlib or zstd)", ErrBadOption, s)
}

// Defaults for options that are not given.
const (
	DefaultBatchMaxMessages   = 1000
	DefaultBatchMaxBytes      = 128 << 10
	DefaultLinger             = 10 * time.Millisecond
	DefaultMaxPendingMessages = 50_000
	DefaultMemoryLimit        = 256 << 20
	DefaultSendTimeout        = 30 * time.Second
)

// MaxPendingLimit and MemoryLimitMax are the largest MaxPendingMessages and
// MemoryLimit (8 Mi messages, 256 GiB): a cluster's share of both is counted
// in one 64-bit word.
const (
	MaxPendingLimit = 1 << 23
	MemoryLimitMax  = 1 << 38
)

// cfg is the validated configuration of a Producer.
type cfg struct {
	topic            string
	batching         bool
	batchMaxMessages int
	batchMaxBytes    int
	linger           time.Duration
	codec            Codec
	maxPending       int
	memoryLimit      int64
	sendTimeout      time.Duration
	connect          connector
	observer         Observer
	logger           *slog.Logger
	transactions     bool
	txnPrebegin      int
	downPolicy       DownPolicy
	downAfter        time.Duration
	downWait         time.Duration
	probeEvery       time.Duration
	blockWhenFull    bool
	configureClient  func(cluster string, o *pulsar.ClientOptions)
	clients          *keyroute.Clients
	name             string
	level            Level
	keyBatching      bool
	chunkMax         int
	encryption       *pulsar.ProducerEncryptionInfo
	schema           pulsar.Schema
	configureWriter  func(cluster string, partition int, o *pulsar.ProducerOptions)
	startTimeout     time.Duration // valid when startSet; else DownAfter's (see StartTimeout)
	startSet         bool
	startAll         bool          // RequireAllClusters
	handoverWait     time.Duration // valid when handoverSet; else SendTimeout + DownAfter
	handoverSet      bool
	discoverEvery    time.Duration // 0: no partition discovery
}

func defaultCfg() cfg {
	return cfg{
		batching:         true,
		batchMaxMessages: DefaultBatchMaxMessages,
		batchMaxBytes:    DefaultBatchMaxBytes,
		linger:           DefaultLinger,
		codec:            LZ4,
		maxPending:       DefaultMaxPendingMessages,
		memoryLimit:      DefaultMemoryLimit,
		sendTimeout:      DefaultSendTimeout,
		connect:          pulsarConnector{},
		downAfter:        DefaultDownAfter,
		downWait:         DefaultDownWait,
		probeEvery:       DefaultDownProbeInterval,
		blockWhenFull:    true,
		txnPrebegin:      DefaultTxnPrebegin,
		discoverEvery:    DefaultPartitionsAutoDiscoveryInterval,
	}
}

func (c *cfg) validate() error {
	switch {
	case c.topic == "":
		return ErrNoTopic
	case c.batchMaxMessages < 1:
		return badOption("BatchMaxMessages", c.batchMaxMessages, "must be >= 1")
	case c.batchMaxBytes < 1:
		return badOption("BatchMaxBytes", c.batchMaxBytes, "must be >= 1")
	case c.linger <= 0:
		return badOption("Linger", c.linger, "must be > 0")
	case c.codec < LZ4 || c.codec > ZSTD:
		return badOption("Compression", c.codec, "unknown codec")
	case c.maxPending < 1 || c.maxPending > MaxPendingLimit:
		return badOption("MaxPendingMessages", c.maxPending, "must be >= 1 and <= MaxPendingLimit")
	case c.memoryLimit < 1 || c.memoryLimit > MemoryLimitMax:
		return badOption("MemoryLimit", c.memoryLimit, "must be >= 1 and <= MemoryLimitMax")
	case c.sendTimeout <= 0:
		return badOption("SendTimeout", c.sendTimeout, "must be > 0")
	case c.txnPrebegin < 0 || c.txnPrebegin > MaxTxnPrebegin:
		return badOption("TxnPrebegin", c.txnPrebegin, "must be >= 0 and <= MaxTxnPrebegin")
	case c.downPolicy > Spill:
		return badOption("OnClusterDown", c.downPolicy, "unknown policy")
	case c.downAfter <= 0:
		return badOption("DownAfter", c.downAfter, "must be > 0")
	case c.downWait <= 0:
		return badOption("DownWait", c.downWait, "must be > 0")
	case c.probeEvery <= 0:
		return badOption("DownProbeInterval", c.probeEvery, "must be > 0")
	case c.startSet && c.startTimeout <= 0:
		return badOption("StartTimeout", c.startTimeout, "must be > 0")
	case c.discoverEvery < 0:
		return badOption("PartitionsAutoDiscoveryInterval", c.discoverEvery, "must be >= 0")
	case c.handoverSet && c.handoverWait <= 0:
		return badOption("HandoverTimeout", c.handoverWait, "must be > 0")
	case c.level < DefaultLevel || c.level > BetterLevel:
		return badOption("CompressionLevel", c.level, "unknown level")
	case c.chunkMax < 0:
		return badOption("Chunking", c.chunkMax, "must be >= 0")
	case c.chunkMax > 0 && c.batching:
		return fmt.Errorf("%w: Chunking(%d) needs Batching(false): pulsar-client-go cannot chunk batched messages", ErrBadOption, c.chunkMax)
	case c.name != "" && !validName(c.name):
		return badOption("Name", fmt.Sprintf("%q", c.name), "letters, digits, '-', '_' and '.' only")
	case c.encryption != nil && (c.encryption.KeyReader == nil || len(c.encryption.Keys) == 0):
		return badOption("Encryption", c.encryption.Keys, "needs a key reader and at least one key name")
	case c.clients != nil && c.configureClient != nil:
		return fmt.Errorf("%w: ConfigureClient configures the clients a Producer opens itself: with WithClients, give it to keyroute.NewClients", ErrBadOption)
	case c.clients != nil && c.transactions && !c.clients.Transactions():
		return fmt.Errorf("%w: Transactions(true) with WithClients needs clients made with keyroute.Transactions(true)", ErrBadOption)
	}
	return nil
}

// Opt configures a Producer.
type Opt interface{ apply(*cfg) }

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

// Topic sets the topic to produce to on every cluster (required), e.g.
// "persistent://public/default/events". A partitioned topic must have been
// created on each cluster beforehand; the partition count is read at New.
func Topic(name string) Opt { return optFunc(func(c *cfg) { c.topic = name }) }

// Batching turns batching on (the default) or off. With batching on, Send
// still flushes its message's batch at once, so it does not wait for Linger.
func Batching(on bool) Opt { return optFunc(func(c *cfg) { c.batching = on }) }

// BatchMaxMessages caps the messages in one batch (default 1000).
func BatchMaxMessages(n int) Opt { return optFunc(func(c *cfg) { c.batchMaxMessages = n }) }

// BatchMaxBytes caps the bytes in one batch (default 128 KiB).
func BatchMaxBytes(n int) Opt { return optFunc(func(c *cfg) { c.batchMaxBytes = n }) }

// Linger is how long a batch may wait for more messages (default 10ms).
func Linger(d time.Duration) Opt { return optFunc(func(c *cfg) { c.linger = d }) }

// Compression sets the codec (default LZ4).
func Compression(codec Codec) Opt { return optFunc(func(c *cfg) { c.codec = codec }) }

// Level is how hard the codec works (pulsar-client-go's CompressionLevel).
// pulsar-client-go v0.21.0 applies it to ZSTD only: it makes LZ4 and ZLib
// without a level.
type Level int

// Compression levels.
const (
	DefaultLevel Level = iota // the codec's default
	FasterLevel               // less CPU, larger batches
	BetterLevel               // more CPU, smaller batches
)

// CompressionLevel sets the codec's level (default DefaultLevel).
func CompressionLevel(l Level) Opt { return optFunc(func(c *cfg) { c.level = l }) }

// KeyBasedBatching makes each batch hold messages of one key (ordering
// key when set) only, as KeyShared subscriptions need to spread a
// partition's keys over their consumers batch by batch (default off: a
// batch mixes the keys of its partition).
func KeyBasedBatching(on bool) Opt { return optFunc(func(c *cfg) { c.keyBatching = on }) }

// Chunking splits a message larger than maxChunkBytes (or than the
// broker's maxMessageSize, whichever is smaller) into chunks that the
// consumer puts together again (default 0: off, and a message above the
// broker's limit fails with pulsar-client-go's ErrMessageTooLarge, not
// written). It needs Batching(false), as pulsar-client-go does.
func Chunking(maxChunkBytes int) Opt { return optFunc(func(c *cfg) { c.chunkMax = maxChunkBytes }) }

// Name names the Producer for broker deduplication: each partition writer
// is named "<name>-<cluster>-<partition>", the same from one run to the
// next, so that a broker with deduplication on recognises a restarted
// Producer and drops the messages it already stored (resend them with
// their Message.SequenceID; ID.Duplicate reports those it dropped). Only
// one Producer with a given name may be connected at a time. Default:
// names chosen by the brokers, different at each start.
//
// Resending is exact with Batching(false) only: pulsar-client-go v0.21.0
// never tells the broker a batch's highest sequence id, so the broker
// remembers only the first id of each stored batch, and a resent batch
// can be stored twice in part or dropped in part
// (apache/pulsar-client-go#59, #1395).
func Name(name string) Opt { return optFunc(func(c *cfg) { c.name = name }) }

// Encryption encrypts every message end to end (pulsar-client-go's
// ProducerEncryptionInfo): a session key per batch, encrypted with the
// public key of each named key that keyReader reads. Consumers need the
// private key to read the messages. A message that cannot be encrypted
// fails (it is not sent in clear).
func Encryption(keyReader crypto.KeyReader, keys ...string) Opt {
	return optFunc(func(c *cfg) {
		c.encryption = &pulsar.ProducerEncryptionInfo{KeyReader: keyReader, Keys: keys,
			ProducerCryptoFailureAction: crypto.ProducerCryptoFailureActionFail}
	})
}

// Schema registers a pulsar-client-go schema (pulsar.NewStringSchema,
// NewJSONSchema, NewAvroSchema, NewProtoSchema, ...) for the topic on
// every cluster: New fails, naming the cluster, where the topic holds an
// incompatible schema (a cluster that joins after New stays down instead,
// Health.Err saying why). Message.Value must then hold the value encoded
// with it; Typed encodes values for you.
func Schema(s pulsar.Schema) Opt { return optFunc(func(c *cfg) { c.schema = s }) }

// ConfigureWriter lets fn adjust the pulsar-client-go options of each
// partition writer before it is created: fn gets the cluster, the
// partition and the options the other settings produced. Use it for what
// the Producer has no option for: producer Properties, Interceptors,
// MaxReconnectToBroker, BackOffPolicyFunc, ProducerAccessMode,
// DisableMultiSchema. The Producer owns Topic (fn's change is undone) and
// relies on its own SendTimeout, MaxPendingMessages and batching settings
// for its outcome and buffer promises: change those with the options. fn
// is also called for the writers SendTxnBulk reserves (see SendTxnBulk):
// their names, if any, get "-bulk" appended after fn, and with an access
// mode other than Shared none are opened.
func ConfigureWriter(fn func(cluster string, partition int, o *pulsar.ProducerOptions)) Opt {
	return optFunc(func(c *cfg) { c.configureWriter = fn })
}

// validName reports whether s is safe in a Pulsar producer name.
func validName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// MaxPendingMessages bounds the messages accepted but not yet reported,
// across all clusters (default 50,000, at most MaxPendingLimit). Each
// cluster gets a share by weight. The Producer keeps the record it tracks
// a message with (about 330 bytes, and 190 more for its Event when
// observed; values not included) for reuse after the message is
// reported, up to a partition's even share of its cluster's
// MaxPendingMessages (at least 1,024 per partition), so that a partition
// that held that many messages sends its next ones without allocating.
func MaxPendingMessages(n int) Opt { return optFunc(func(c *cfg) { c.maxPending = n }) }

// MemoryLimit bounds the bytes (keys, values and properties) of messages
// accepted but not yet reported, across all clusters (default 256 MiB, at
// most MemoryLimitMax). Each cluster gets a share by weight.
func MemoryLimit(bytes int64) Opt { return optFunc(func(c *cfg) { c.memoryLimit = bytes }) }

// SendTimeout bounds the time from accepting a message to its broker
// acknowledgement (default 30s); past it the message fails with
// ErrSendTimeout, its outcome unknown. pulsar-client-go v0.21.0 checks
// timeouts once per SendTimeout and re-arms for a full period when the
// oldest message has not expired yet, so a message can take up to about
// twice SendTimeout to fail.
func SendTimeout(d time.Duration) Opt { return optFunc(func(c *cfg) { c.sendTimeout = d }) }

// Logger routes the Producer's logs and pulsar-client-go's logs to l (see
// the plugin/kzap package for zap). Without it, nothing is logged.
func Logger(l *slog.Logger) Opt { return optFunc(func(c *cfg) { c.logger = l }) }

// Transactions enables Pulsar transactions on every cluster's client (off by
// default); the transaction helpers need it.
func Transactions(on bool) Opt { return optFunc(func(c *cfg) { c.transactions = on }) }

// TxnPrebegin sets how many Pulsar transactions the Producer keeps begun
// ahead on each cluster that a commit has touched (default
// DefaultTxnPrebegin; 0: a commit begins its own), so that a commit does not
// wait for the begin's round trip to the transaction coordinator. Pooled
// transactions have DefaultTxnTimeout; a commit with another TxnTimeout
// begins its own, and one that takes a pooled transaction has at least
// half of DefaultTxnTimeout left. Unused ones are ended with an empty
// commit (no aborted transaction is left on the broker) before half their
// timeout has passed, and at Close. Without Transactions(true) it does
// nothing.
func TxnPrebegin(n int) Opt { return optFunc(func(c *cfg) { c.txnPrebegin = n }) }

// BlockWhenFull says what Send and SendAsync do when the message's cluster
// has used up its share of MaxPendingMessages or MemoryLimit: wait for
// space until their ctx ends (true, the default), or fail at once with
// ErrBufferFull (false).
func BlockWhenFull(on bool) Opt { return optFunc(func(c *cfg) { c.blockWhenFull = on }) }

// ConfigureClient lets fn adjust each cluster's pulsar-client-go client
// options before the client is made: fn gets the cluster's name and the
// options the topology and the other options produced. Use it for what
// the Producer has no option for, e.g. MetricsRegisterer to put
// pulsar-client-go's Prometheus collectors in a registry of your own.
// Every client's metrics carry a "cluster" label with the cluster's name
// (added to CustomMetricsLabels), so that the N clients' series stay
// apart; fn may add labels but must keep the same label names for every
// cluster (Prometheus refuses collectors whose label names differ).
func ConfigureClient(fn func(cluster string, o *pulsar.ClientOptions)) Opt {
	return optFunc(func(c *cfg) { c.configureClient = fn })
}

// WithClients makes the Producer write through cs's clients (see package
// keyroute) instead of opening a client per cluster: New checks that cs was
// made for the topology it is given (keyroute.ErrOtherTopology). Close
// leaves the clients open; cs.Close closes the Producer if it is still
// open. The clients' memory limit (keyroute.MemoryLimit) is shared by
// every producer made from them; MemoryLimit still bounds this Producer's
// buffer.
func WithClients(cs *keyroute.Clients) Opt { return optFunc(func(c *cfg) { c.clients = cs }) }

// DownPolicy is what happens to messages routed to a cluster that is down.
type DownPolicy uint8

// Down policies.
const (
	// FailFast fails new messages for a down cluster at once with
	// ErrClusterDown. The default.
	FailFast DownPolicy = iota
	// WaitUp makes new messages for a down cluster wait until it is up
	// again, at most DownWait (and their ctx), then fail with ErrClusterDown.
	WaitUp
	// Spill sends new messages for a down cluster to the cluster their key
	// would go to without it (rendezvous' next choice), so they are written
	// somewhere. THIS BREAKS PER-KEY ORDER AND PLACEMENT for those keys: a
	// key's messages then live on two clusters, and a consumer sees them in
	// no defined order across the two. Use it only for data where
	// availability beats order.
	Spill
)

func (d DownPolicy) String() string {
	switch d {
	case FailFast:
		return "fail-fast"
	case WaitUp:
		return "wait"
	case Spill:
		return "spill"
	}
	return "DownPolicy(?)"
}

// Defaults for cluster health.
const (
	DefaultDownAfter = 3 * time.Second
	DefaultDownWait  = 10 * time.Second
	// DefaultDownProbeInterval is how often a down cluster is probed.
	DefaultDownProbeInterval = time.Second
)

// OnClusterDown sets the policy for messages routed to a down cluster
// (default FailFast). Keyless messages never wait or fail for a down
// cluster: they go to an up one, whatever the policy.
func OnClusterDown(p DownPolicy) Opt { return optFunc(func(c *cfg) { c.downPolicy = p }) }

// DownAfter is how long a cluster may hold messages without a single
// acknowledgement before it counts as down (default 3s). It is up again at
// its next acknowledgement, or, when it holds no message, at its first
// successful probe (see DownProbeInterval).
func DownAfter(d time.Duration) Opt { return optFunc(func(c *cfg) { c.downAfter = d }) }

// DownProbeInterval is how often a down cluster is probed (default 1s):
// a topic metadata lookup on the cluster's own client, a broker round trip
// that writes nothing. A cluster that holds no message is up again at its
// first successful probe, so recovery is seen whatever the traffic: under
// every OnClusterDown policy, with keyless messages only, or with none.
// One probe runs at a time per cluster, and pulsar-client-go retries a
// refused lookup inside that one call until the client's operation
// timeout: against a killed broker, recovery is seen up to that timeout
// (the topology's OperationTimeout, 30s by default) after it is back.
func DownProbeInterval(d time.Duration) Opt { return optFunc(func(c *cfg) { c.probeEvery = d }) }

// DownWait bounds how long a message waits for a down cluster under WaitUp
// (default 10s).
func DownWait(d time.Duration) Opt { return optFunc(func(c *cfg) { c.downWait = d }) }

// DefaultPartitionsAutoDiscoveryInterval is how often the Producer reads
// each cluster's partition count again by default.
const DefaultPartitionsAutoDiscoveryInterval = time.Minute

// PartitionsAutoDiscoveryInterval is how often the Producer reads the
// topic's partition count on each connected cluster again (default one
// minute; 0 never does), as pulsar-client-go's option of that name does
// for its own producers. A grown count is applied as a topology change
// with its own epoch (see Update): the new partitions' writers open
// first, then the keys that move to them are handed over in order
// (HANDOVER.md section 5.5). A count below the one written (Pulsar
// cannot shrink a partitioned topic: the topic was deleted and made
// again) is not applied: Health reports it (ClusterHealth.PartitionsErr)
// and the Producer logs it, and goes on writing the partitions it has.
func PartitionsAutoDiscoveryInterval(d time.Duration) Opt {
	return optFunc(func(c *cfg) { c.discoverEvery = d })
}

// HandoverTimeout bounds how long a topology change (Update) waits for an
// old owner partition to acknowledge its hand-over marker, and for the
// messages handed to it before, while it holds the moved keys' new
// messages (default SendTimeout + DownAfter). Then OnClusterDown decides
// for those messages and for the moved keys' later ones until the marker
// is acknowledged (HANDOVER.md section 7.1): FailFast fails them with
// ErrClusterDown (not written), WaitUp waits DownWait longer and then
// fails them so, Spill writes them to their new owner marked unordered
// and reports a possible reorder (Observer, log).
func HandoverTimeout(d time.Duration) Opt {
	return optFunc(func(c *cfg) { c.handoverWait, c.handoverSet = d, true })
}

// handoverBound is how long a hand-over waits before its down policy
// decides (HandoverTimeout).
func (c *cfg) handoverBound() time.Duration {
	if c.handoverSet {
		return c.handoverWait
	}
	return c.sendTimeout + c.downAfter
}

// StartTimeout bounds how long New waits for a cluster to answer (default
// DownAfter's value). A cluster whose writers are not open by then starts
// down, as if it had gone down while running: Health says so and why, its
// keys follow OnClusterDown, and it joins by itself (its writers opened,
// its partition count read then) once it answers, tried every
// DownProbeInterval. New returns within StartTimeout whenever at least one
// cluster answers; until one does, it waits for its ctx. A cluster that
// answers with an error (a topic missing there, credentials refused, a
// bad URL) is not down but wrong: New fails naming it. RequireAllClusters
// turns this off.
func StartTimeout(d time.Duration) Opt {
	return optFunc(func(c *cfg) { c.startTimeout, c.startSet = d, true })
}

// RequireAllClusters makes New wait for every cluster (bounded by its ctx
// and by pulsar-client-go's operation timeout per call) and fail, naming
// each cluster it could not open, unless all of them opened (default off:
// see StartTimeout).
func RequireAllClusters(on bool) Opt { return optFunc(func(c *cfg) { c.startAll = on }) }

// Observe sets the observer (see the plugin/kotel package for
// OpenTelemetry). A later Observe replaces an earlier one; nil removes it.
func Observe(o Observer) Opt { return optFunc(func(c *cfg) { c.observer = o }) }

// Defaults for transaction options that are not given.
const (
	// DefaultTxnTimeout is the Pulsar transaction timeout. Pulsar
	// transactions begin when Commit starts, or up to half of this before
	// when taken from the TxnPrebegin pool, so this bounds the commit
	// phase, and it is how long a transaction whose commit failed keeps the
	// touched partitions' consumers waiting before the broker aborts it.
	DefaultTxnTimeout = time.Minute
	// DefaultTxnMaxMessages bounds the messages staged in one transaction.
	DefaultTxnMaxMessages = 10_000
	// DefaultTxnMaxBytes bounds the bytes (keys, values, properties) staged
	// in one transaction.
	DefaultTxnMaxBytes = 16 << 20
	// DefaultTxnRetries is how many times a commit that failed before any
	// message could have been written is tried again.
	DefaultTxnRetries = 2
	// DefaultTxnPrebegin is how many Pulsar transactions are kept begun
	// ahead per cluster (TxnPrebegin).
	DefaultTxnPrebegin = 1
	// MaxTxnPrebegin is the largest TxnPrebegin.
	MaxTxnPrebegin = 64
)

// txnCfg is the validated configuration of one transaction (or of the
// transactions of one SendTxnBulk call).
type txnCfg struct {
	timeout       time.Duration
	maxMessages   int
	maxBytes      int64
	singleCluster bool
	retries       int
	beforeCommit  func(ctx context.Context, clusters []string) error
}

func defaultTxnCfg() txnCfg {
	return txnCfg{
		timeout:     DefaultTxnTimeout,
		maxMessages: DefaultTxnMaxMessages,
		maxBytes:    DefaultTxnMaxBytes,
		retries:     DefaultTxnRetries,
	}
}

func newTxnCfg(opts []TxnOpt) (txnCfg, error) {
	c := defaultTxnCfg()
	for _, o := range opts {
		o.applyTxn(&c)
	}
	switch {
	case c.timeout <= 0:
		return c, badOption("TxnTimeout", c.timeout, "must be > 0")
	case c.maxMessages < 1:
		return c, badOption("TxnMaxMessages", c.maxMessages, "must be >= 1")
	case c.maxBytes < 1:
		return c, badOption("TxnMaxBytes", c.maxBytes, "must be >= 1")
	case c.retries < 0:
		return c, badOption("TxnRetries", c.retries, "must be >= 0")
	}
	return c, nil
}

// TxnOpt configures a transaction (BeginTxn, RunInTxn, SendTxnBulk). It
// cannot be passed to New.
type TxnOpt interface{ applyTxn(*txnCfg) }

type txnOptFunc func(*txnCfg)

func (f txnOptFunc) applyTxn(c *txnCfg) { f(c) }

// TxnTimeout sets the Pulsar transaction timeout (default 1 minute). The
// Pulsar transactions begin when Commit starts (a commit with the default
// timeout may take one begun up to half of it before: TxnPrebegin), so
// staging time does not count. The broker aborts a transaction still open
// past its timeout.
func TxnTimeout(d time.Duration) TxnOpt { return txnOptFunc(func(c *txnCfg) { c.timeout = d }) }

// TxnMaxMessages bounds the messages a transaction may stage (default
// 10,000); Send past it returns ErrTxnTooLarge. SendTxnBulk ignores it: its
// perTxn argument sets the count.
func TxnMaxMessages(n int) TxnOpt { return txnOptFunc(func(c *txnCfg) { c.maxMessages = n }) }

// TxnMaxBytes bounds the bytes (keys, values and properties) a transaction
// may stage (default 16 MiB); Send past it returns ErrTxnTooLarge. A single
// message larger than the bound is rejected. SendTxnBulk closes a
// transaction early when the next message would pass it.
func TxnMaxBytes(n int64) TxnOpt { return txnOptFunc(func(c *txnCfg) { c.maxBytes = n }) }

// TxnSingleCluster confines the transaction to one cluster, so that it is
// atomic: the first message's key picks the cluster, and Send returns a
// *CrossClusterError (ErrTxnCrossCluster) for any later key that routes to
// another. Keyless messages always go to the transaction's cluster.
// SendTxnBulk transactions are always confined to one partition each.
func TxnSingleCluster() TxnOpt { return txnOptFunc(func(c *txnCfg) { c.singleCluster = true }) }

// TxnRetries sets how many times Commit tries again after an attempt that
// failed before any message could have been written to a broker: a Pulsar
// transaction that could not begin (for example while a coordinator
// recovers), or a partition that could not be added to the transaction
// (default 2; 0 disables). Such an attempt leaves nothing behind, so the
// retry cannot duplicate. An attempt that failed after a message may have
// been written is never retried: because of apache/pulsar-client-go#1498
// its messages may be delivered despite the abort, and a retry could
// deliver them twice.
func TxnRetries(n int) TxnOpt { return txnOptFunc(func(c *txnCfg) { c.retries = n }) }

// BeforeCommit sets a hook that Commit calls once every staged message has
// been written and acknowledged on every touched cluster, and before the
// first Pulsar commit is sent. clusters are the touched clusters in
// topology order. A non-nil error aborts the transaction (a *TxnAbortError
// wrapping it); since messages have been written by then, see
// apache/pulsar-client-go#1498 on TxnAbortError. The hook runs on the
// committing goroutine; under SendTxnBulk it runs once per Pulsar
// transaction and may run concurrently for different partitions. It exists for
// last-moment checks and for fault-injection tests.
func BeforeCommit(fn func(ctx context.Context, clusters []string) error) TxnOpt {
	return txnOptFunc(func(c *txnCfg) { c.beforeCommit = fn })
}

// badOption is the error for an option given a value it cannot use.
func badOption(opt string, v any, want string) error {
	return fmt.Errorf("%w: %s(%v): %s", ErrBadOption, opt, v, want)
}
