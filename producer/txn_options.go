package producer

import (
	"context"
	"fmt"
	"time"
)

// Defaults for transaction options that are not given.
const (
	// DefaultTxnTimeout is the Pulsar transaction timeout. Pulsar
	// transactions begin only when Commit starts, so this bounds the commit
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
	bad := func(opt string, v any, want string) error {
		return fmt.Errorf("%w: %s(%v): %s", ErrBadOption, opt, v, want)
	}
	switch {
	case c.timeout <= 0:
		return c, bad("TxnTimeout", c.timeout, "must be > 0")
	case c.maxMessages < 1:
		return c, bad("TxnMaxMessages", c.maxMessages, "must be >= 1")
	case c.maxBytes < 1:
		return c, bad("TxnMaxBytes", c.maxBytes, "must be >= 1")
	case c.retries < 0:
		return c, bad("TxnRetries", c.retries, "must be >= 0")
	}
	return c, nil
}

// TxnOpt configures a transaction (BeginTxn, RunInTxn, SendTxnBulk). It
// cannot be passed to New.
type TxnOpt interface{ applyTxn(*txnCfg) }

type txnOptFunc func(*txnCfg)

func (f txnOptFunc) applyTxn(c *txnCfg) { f(c) }

// TxnTimeout sets the Pulsar transaction timeout (default 1 minute). The
// Pulsar transactions begin when Commit starts, so staging time does not
// count. The broker aborts a transaction still open past its timeout.
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
// SendTxnBulk transactions are always confined to one cluster each.
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
// transaction and may run concurrently for different clusters. It exists for
// last-moment checks and for fault-injection tests.
func BeforeCommit(fn func(ctx context.Context, clusters []string) error) TxnOpt {
	return txnOptFunc(func(c *txnCfg) { c.beforeCommit = fn })
}
