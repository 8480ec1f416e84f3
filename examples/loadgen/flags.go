package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keyroute/keyroute/producer"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1   // the run failed or messages went unaccounted
	exitUsage       = 2   // bad flags or an unsupported combination
	exitInterrupted = 130 // stopped by SIGINT/SIGTERM (results so far printed)
)

// maxMessageSize is Pulsar's default maxMessageSize (5 MiB); a bigger
// payload cannot be written with default broker settings.
const maxMessageSize = 5 << 20

// config holds the parsed flags. It is filled by parseFlags and checked
// once by validate; nothing else modifies it.
type config struct {
	topology   string
	topic      string
	partitions int
	cleanup    bool // delete the topics loadgen created at the end

	rate    float64 // msg/s over all senders; 0 = as fast as possible
	size    int
	keys    int
	keyDist string
	zipfS   float64
	seed    uint64

	duration time.Duration
	warmup   time.Duration

	mode     string // "async" or "sync"
	senders  int    // 0 until validate picks the mode's default
	intended bool   // latency from the intended send time (with -rate)

	batching         bool
	batchMaxMessages int
	linger           time.Duration
	compression      string
	codec            producer.Codec
	maxPending       int
	memoryLimit      byteSize
	sendTimeout      time.Duration
	txnSize          int

	jsonPath   string
	plotPath   string
	compareRaw bool

	// The load's shape. Without -workload: one topic (-topic), one
	// producer, -subscriptions x -consumers consumers.
	topics            int
	producersPerTopic int
	subscriptions     int    // per topic; 0: produce only
	consumers         int    // per subscription
	subType           string // failover, exclusive, shared or key_shared

	payloadFile  string // pulsar-perf's -f: one payload per line (-payload-delimiter)
	payloadDelim string
	numMessages  int64  // pulsar-perf's -n: stop after this many (0: no limit)
	untilN       bool   // -n without -duration: the window lasts until the n-th message
	histFile     string // HdrHistogram interval log

	// OpenMessaging Benchmark.
	workloadPath string
	wl           *workload // nil without -workload
	ombMinute    time.Duration
	ombJSON      string
	ombDriver    string

	pay *payloads // built by parseFlags from the payload settings
}

// forever stands for "no time limit" (-n without -duration).
const forever = time.Duration(1 << 62)

// subTypes are the -sub-type values.
var subTypes = []string{"failover", "exclusive", "shared", "key_shared"}

// byteSize is a flag.Value for byte counts: "67108864", "64MiB", "1GiB",
// "500MB", "128KiB".
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func parseByteSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
	}
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n > math.MaxInt64/mult || n < math.MinInt64/mult {
		return 0, fmt.Errorf("not a byte size (want e.g. 67108864, 64MiB or 1GiB): %q", s)
	}
	return n * mult, nil
}

// errUsage marks errors that should end the program with exitUsage.
var errUsage = errors.New("usage")

// usageError is a problem with one flag.
type usageError struct {
	Flag   string
	Reason string
}

func (e *usageError) Error() string { return "-" + e.Flag + ": " + e.Reason }
func (e *usageError) Unwrap() error { return errUsage }

func bad(flagName, format string, args ...any) error {
	return &usageError{Flag: flagName, Reason: fmt.Sprintf(format, args...)}
}

// newFlagSet declares every flag on a fresh FlagSet writing into cfg.
func newFlagSet(cfg *config, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, `loadgen produces keyed messages to every cluster of a topology through the
keyroute producer and reports throughput and send-to-ack latency, overall and
per cluster. Without -topology it starts five local Pulsar clusters (downloading
Pulsar on first use) and stops them at the end.

usage: go run ./examples/loadgen [flags]

`)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.topology, "topology", "", "topology YAML `file` of the clusters to load (empty: start five local clusters)")
	fs.StringVar(&cfg.topic, "topic", "persistent://public/default/loadgen", "topic to produce to on every cluster")
	fs.IntVar(&cfg.partitions, "partitions", 5, "create the topic with this many partitions on every cluster through its admin URL, with the cluster's TLS settings and token (0: do not create)")
	fs.BoolVar(&cfg.cleanup, "cleanup", false, "at the end delete the topics loadgen created (not those that were there before), also after a failed or interrupted run")
	fs.Float64Var(&cfg.rate, "rate", 0, "total messages per second over all senders (0: as fast as possible)")
	fs.IntVar(&cfg.size, "size", 128, "message payload `bytes`")
	fs.IntVar(&cfg.keys, "keys", 10000, "number of distinct message keys")
	fs.StringVar(&cfg.keyDist, "key-dist", "uniform", "key distribution: uniform, zipf, or OMB's none (NO_KEY), round-robin (KEY_ROUND_ROBIN), random-nano (RANDOM_NANO)")
	fs.Float64Var(&cfg.zipfS, "zipf-s", 1.2, "zipf exponent s (> 1) for -key-dist zipf; larger is more skewed")
	fs.Uint64Var(&cfg.seed, "seed", 1, "random seed for key choice")
	fs.DurationVar(&cfg.duration, "duration", 20*time.Second, "measured run time, after the warm-up")
	fs.DurationVar(&cfg.warmup, "warmup", 5*time.Second, "warm-up time excluded from the results")
	fs.StringVar(&cfg.mode, "mode", "async", "async (SendAsync with a callback) or sync (Send, one message at a time per sender)")
	fs.IntVar(&cfg.senders, "senders", 0, "concurrent sender goroutines (0: 1 for async, 16 for sync)")
	fs.BoolVar(&cfg.intended, "intended", false, "with -rate: measure latency from the intended send time, not the actual one (counts time spent waiting to send)")
	fs.BoolVar(&cfg.batching, "batching", true, "batch messages per partition")
	fs.IntVar(&cfg.batchMaxMessages, "batch-max-messages", producer.DefaultBatchMaxMessages, "maximum messages per batch")
	fs.DurationVar(&cfg.linger, "linger", producer.DefaultLinger, "how long a batch may wait for more messages")
	fs.StringVar(&cfg.compression, "compression", "lz4", "compression codec: lz4, none, zlib or zstd")
	fs.IntVar(&cfg.maxPending, "max-pending", producer.DefaultMaxPendingMessages, "messages accepted but not yet acknowledged, over all clusters")
	cfg.memoryLimit = producer.DefaultMemoryLimit
	fs.Var(&cfg.memoryLimit, "memory-limit", "bytes of messages accepted but not yet acknowledged, over all clusters (e.g. 256MiB)")
	fs.DurationVar(&cfg.sendTimeout, "send-timeout", producer.DefaultSendTimeout, "fail a message not acknowledged within this time")
	fs.IntVar(&cfg.txnSize, "txn-size", 0, "messages per transaction: each sender stages this many messages in a producer.Txn and commits (0: no transactions; -mode is then ignored, senders default to 16)")
	fs.StringVar(&cfg.jsonPath, "json", "", "write the results as JSON to this `file`")
	fs.StringVar(&cfg.plotPath, "plot", "", "write a PNG plot of throughput and latency per second to this `file`")
	fs.BoolVar(&cfg.compareRaw, "compare-raw", false, "compare the SDK with raw pulsar-client-go on the first cluster (raw/sdk/raw/sdk)")
	fs.IntVar(&cfg.subscriptions, "subscriptions", 0, "subscriptions to consume the topic with, through the keyroute consumer, for end-to-end latency (0: produce only)")
	fs.IntVar(&cfg.consumers, "consumers", 1, "consumers per subscription (with -subscriptions)")
	fs.StringVar(&cfg.subType, "sub-type", "failover", "subscription type: failover (OMB's Pulsar default), exclusive, shared or key_shared")
	fs.StringVar(&cfg.payloadFile, "payload-file", "", "take payloads from this `file`, one per line (see -payload-delimiter), each message a random one (pulsar-perf's -f)")
	fs.StringVar(&cfg.payloadDelim, "payload-delimiter", `\n`, "separator of the payloads in -payload-file (\\n, \\r and \\t stand for themselves)")
	fs.Int64Var(&cfg.numMessages, "n", 0, "stop after handing over this many messages, warm-up included (0: no limit; without -duration the run lasts until then)")
	fs.StringVar(&cfg.histFile, "histogram-file", "", "write an HdrHistogram interval log (one interval a second, nanoseconds; tags publish, e2e and per cluster publish.NAME, e2e.NAME) to this `file`")
	fs.StringVar(&cfg.workloadPath, "workload", "", "run this OpenMessaging Benchmark workload `file` (YAML); see -omb-minute and -omb-json")
	fs.DurationVar(&cfg.ombMinute, "omb-minute", time.Minute, "length of one of the workload's minutes (testDurationMinutes, warmupDurationMinutes), e.g. 6s for tests; OMB's 10 s reporting interval is a sixth of it (at least 1 s)")
	fs.StringVar(&cfg.ombDriver, "omb-driver", "", "the OMB result's driver name, its series label in OMB's charts (default keyroute-N-clusters)")
	fs.StringVar(&cfg.ombJSON, "omb-json", "", "write OMB's result JSON (TestResult) to this `file` (with -workload, default <name>-keyroute-<date>.json as OMB names it)")
	return fs
}

// parseFlags parses args into a validated config. Errors wrap errUsage;
// flag.ErrHelp is returned as is for -h.
func parseFlags(args []string, out io.Writer) (*config, error) {
	cfg := &config{}
	fs := newFlagSet(cfg, out)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q (flags only)", errUsage, fs.Arg(0))
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if err := prepare(cfg, explicit); err != nil {
		return nil, err
	}
	if err := validate(cfg); err != nil {
		return nil, err
	}
	pay, err := buildPayloads(cfg)
	if err != nil {
		return nil, err
	}
	cfg.pay = pay
	if cfg.payloadFile != "" {
		cfg.size = max(1, int(pay.meanLen+0.5)) // for MB/s
	}
	return cfg, nil
}

// prepare applies -workload and the settings that depend on which flags
// were given (explicit).
func prepare(c *config, explicit map[string]bool) error {
	c.topics, c.producersPerTopic = 1, 1
	c.payloadDelim = strings.NewReplacer(`\n`, "\n", `\r`, "\r", `\t`, "\t").Replace(c.payloadDelim)
	var errs []error
	if explicit["omb-minute"] && c.workloadPath == "" {
		errs = append(errs, bad("omb-minute", "needs -workload"))
	}
	if c.ombMinute <= 0 {
		errs = append(errs, bad("omb-minute", "must be > 0 (got %v)", c.ombMinute))
	}
	if explicit["size"] && c.payloadFile != "" {
		errs = append(errs, bad("size", "conflicts with -payload-file: the payloads' sizes come from the file"))
	}
	if c.workloadPath != "" && c.ombMinute > 0 {
		w, err := loadWorkload(c.workloadPath)
		if err != nil {
			return err
		}
		if err := applyWorkload(c, w, explicit); err != nil {
			errs = append(errs, err)
		}
	}
	if c.numMessages > 0 && !explicit["duration"] && c.wl == nil {
		c.duration, c.untilN = forever, true
	}
	if c.numMessages > 0 && !explicit["warmup"] && c.wl == nil {
		c.warmup = 0 // as pulsar-perf: -n counts from the first message
	}
	return errors.Join(errs...)
}

// validate checks every flag and reports every problem at once, each naming
// its flag. It fills in derived values (codec, default senders).
func validate(c *config) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }

	if strings.TrimSpace(c.topic) == "" {
		add(bad("topic", "must not be empty"))
	}
	if c.partitions < 0 || c.partitions > 10000 {
		add(bad("partitions", "must be between 0 and 10000 (got %d)", c.partitions))
	}
	if c.cleanup && c.partitions == 0 {
		add(bad("cleanup", "has nothing to delete with -partitions 0 (loadgen creates no topic then)"))
	}
	if math.IsNaN(c.rate) || math.IsInf(c.rate, 0) || c.rate < 0 {
		add(bad("rate", "must be a finite number >= 0 (got %v)", c.rate))
	}
	if c.size < 1 || c.size > maxMessageSize {
		add(bad("size", "must be between 1 and %d bytes (got %d)", maxMessageSize, c.size))
	}
	if c.keys < 1 {
		add(bad("keys", "must be at least 1 (got %d)", c.keys))
	}
	switch c.keyDist {
	case "uniform", "none", "round-robin", "random-nano":
	case "zipf":
		if !(c.zipfS > 1) || math.IsInf(c.zipfS, 0) {
			add(bad("zipf-s", "must be a finite number > 1 (got %v)", c.zipfS))
		}
	default:
		add(bad("key-dist", "must be one of %s (got %q)", strings.Join(keyDists, ", "), c.keyDist))
	}
	if c.duration <= 0 {
		add(bad("duration", "must be > 0 (got %v)", c.duration))
	}
	if c.warmup < 0 {
		add(bad("warmup", "must be >= 0 (got %v)", c.warmup))
	}
	switch c.mode {
	case "async":
		if c.senders == 0 {
			c.senders = 1
			if c.txnSize > 0 {
				c.senders = 16 // each sender waits for its commits
			}
		}
	case "sync":
		if c.senders == 0 {
			c.senders = 16
		}
	default:
		add(bad("mode", "must be async or sync (got %q)", c.mode))
	}
	if c.senders < 0 || c.senders > 10000 {
		add(bad("senders", "must be between 0 and 10000 (got %d)", c.senders))
	}
	if c.intended && c.rate == 0 {
		add(bad("intended", "needs -rate > 0 (without a rate there is no intended send time)"))
	}
	if c.batchMaxMessages < 1 {
		add(bad("batch-max-messages", "must be at least 1 (got %d)", c.batchMaxMessages))
	}
	if c.linger <= 0 {
		add(bad("linger", "must be > 0 (got %v)", c.linger))
	}
	if codec, err := producer.ParseCodec(c.compression); err != nil {
		add(bad("compression", "must be lz4, none, zlib or zstd (got %q)", c.compression))
	} else {
		c.codec = codec
	}
	if c.maxPending < 1 {
		add(bad("max-pending", "must be at least 1 (got %d)", c.maxPending))
	}
	if c.memoryLimit < 1 {
		add(bad("memory-limit", "must be at least 1 byte (got %d)", c.memoryLimit))
	} else if int64(c.memoryLimit) < int64(c.size) {
		add(bad("memory-limit", "%d bytes cannot hold one %d-byte message (-size)", c.memoryLimit, c.size))
	}
	if c.sendTimeout <= 0 {
		add(bad("send-timeout", "must be > 0 (got %v)", c.sendTimeout))
	}
	if c.txnSize < 0 {
		add(bad("txn-size", "must be >= 0 (got %d)", c.txnSize))
	}
	if c.compareRaw && c.txnSize > 0 {
		add(bad("compare-raw", "cannot be combined with -txn-size"))
	}
	if c.numMessages < 0 {
		add(bad("n", "must be >= 0 (got %d)", c.numMessages))
	}
	if c.subscriptions < 0 || c.subscriptions > 100 {
		add(bad("subscriptions", "must be between 0 and 100 (got %d)", c.subscriptions))
	}
	if c.consumers < 1 || c.consumers > 100 {
		add(bad("consumers", "must be between 1 and 100 (got %d)", c.consumers))
	}
	if !slices.Contains(subTypes, c.subType) {
		add(bad("sub-type", "must be one of %s (got %q)", strings.Join(subTypes, ", "), c.subType))
	} else if c.subType == "exclusive" && c.consumers > 1 && c.subscriptions > 0 {
		add(bad("sub-type", "exclusive allows one consumer per subscription (got %d)", c.consumers))
	}
	if c.keyDist == "none" && c.txnSize > 0 {
		add(bad("key-dist", "none cannot be combined with -txn-size (transactions route by key)"))
	}
	if c.subscriptions > 0 && c.txnSize > 0 {
		add(bad("subscriptions", "cannot be combined with -txn-size"))
	}
	if c.subscriptions > 0 && c.compareRaw {
		add(bad("subscriptions", "cannot be combined with -compare-raw"))
	}
	if c.payloadDelim == "" {
		add(bad("payload-delimiter", "must not be empty"))
	}
	if c.plotPath != "" && !strings.HasSuffix(strings.ToLower(c.plotPath), ".png") {
		add(bad("plot", "file name must end in .png (got %q)", c.plotPath))
	}
	return errors.Join(errs...)
}

// txnSupported reports whether the producer package offers transactions
// (producer.BeginTxn); -txn-size is rejected when it does not.
const txnSupported = true

// checkSupported rejects combinations this build cannot run.
func checkSupported(c *config) error {
	if c.txnSize > 0 && !txnSupported {
		return bad("txn-size", "transactions not supported yet")
	}
	return nil
}
