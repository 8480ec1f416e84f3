package producer

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
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
	downPolicy       DownPolicy
	downAfter        time.Duration
	downWait         time.Duration
	probeEvery       time.Duration
	blockWhenFull    bool
	configureClient  func(cluster string, o *pulsar.ClientOptions)
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
	}
}

func (c *cfg) validate() error {
	bad := func(opt string, v any, want string) error {
		return fmt.Errorf("%w: %s(%v): %s", ErrBadOption, opt, v, want)
	}
	switch {
	case c.topic == "":
		return ErrNoTopic
	case c.batchMaxMessages < 1:
		return bad("BatchMaxMessages", c.batchMaxMessages, "must be >= 1")
	case c.batchMaxBytes < 1:
		return bad("BatchMaxBytes", c.batchMaxBytes, "must be >= 1")
	case c.linger <= 0:
		return bad("Linger", c.linger, "must be > 0")
	case c.codec < LZ4 || c.codec > ZSTD:
		return bad("Compression", c.codec, "unknown codec")
	case c.maxPending < 1:
		return bad("MaxPendingMessages", c.maxPending, "must be >= 1")
	case c.memoryLimit < 1:
		return bad("MemoryLimit", c.memoryLimit, "must be >= 1")
	case c.sendTimeout <= 0:
		return bad("SendTimeout", c.sendTimeout, "must be > 0")
	case c.downPolicy > Spill:
		return bad("OnClusterDown", c.downPolicy, "unknown policy")
	case c.downAfter <= 0:
		return bad("DownAfter", c.downAfter, "must be > 0")
	case c.downWait <= 0:
		return bad("DownWait", c.downWait, "must be > 0")
	case c.probeEvery <= 0:
		return bad("DownProbeInterval", c.probeEvery, "must be > 0")
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

// MaxPendingMessages bounds the messages accepted but not yet reported,
// across all clusters (default 50,000). Each cluster gets a share by weight.
func MaxPendingMessages(n int) Opt { return optFunc(func(c *cfg) { c.maxPending = n }) }

// MemoryLimit bounds the bytes (keys, values and properties) of messages
// accepted but not yet reported, across all clusters (default 256 MiB). Each
// cluster gets a share by weight.
func MemoryLimit(bytes int64) Opt { return optFunc(func(c *cfg) { c.memoryLimit = bytes }) }

// SendTimeout bounds the time from accepting a message to its broker
// acknowledgement (default 30s); past it the message fails with
// ErrSendTimeout.
func SendTimeout(d time.Duration) Opt { return optFunc(func(c *cfg) { c.sendTimeout = d }) }

// Logger routes the Producer's logs and pulsar-client-go's logs to l (see
// the plugin/kzap package for zap). Without it, nothing is logged.
func Logger(l *slog.Logger) Opt { return optFunc(func(c *cfg) { c.logger = l }) }

// Transactions enables Pulsar transactions on every cluster's client (off by
// default); the transaction helpers need it.
func Transactions(on bool) Opt { return optFunc(func(c *cfg) { c.transactions = on }) }

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
