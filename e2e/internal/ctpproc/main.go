// Command ctpproc is the consume-transform-produce processor of the e2e
// txn suite's kill spec: a separate process that the spec SIGKILLs while
// it runs. It reads the input topic with keyroute's consumer, writes each
// message as "out:<value>|<tag>" with the same key to the output topic
// with keyroute's producer, in transactions of at most -batch messages
// that also acknowledge the inputs (consumer.TxnAck, producer.Txn.Ack),
// commits, and loops. <tag> names the transaction ("<name>-t<seq>").
//
// It reports on stdout, one line per event, each written with one write
// so that a line written before a SIGKILL is complete in the pipe:
//
//	fenced <waited> <open>                      -fence (fence.go): how long it
//	                                            waited; open transactions
//	                                            holding acks, per partition,
//	                                            at first
//	ready
//	commit <tag> <messages>                     before Commit
//	ack <tag> <cluster> <mostSigBits> <leastSigBits>
//	                                            before the first ack of a
//	                                            Pulsar transaction, i.e.
//	                                            after the tag's sends on
//	                                            that cluster and before
//	                                            any commit
//	done <tag> <clusters,...>                   Commit returned nil
//	drained                                     -drain: backlog 0, exiting
//
// The ack line is what lets the spec tell a committed output from one of an
// aborted transaction (which pulsar-client-go v0.21.0 still delivers,
// apache/pulsar-client-go#1498): it names the Pulsar transaction that holds
// the tag's messages on that cluster, and the broker says whether it was
// aborted. A transaction that never logged an ack on a cluster never
// committed there, since the commits come after every ack.
//
// With -drain it exits 0 once nothing arrives for -poll and the
// subscription's backlog is 0 on every cluster; without it, it runs until
// it is killed. Errors go to stderr with exit code 1; -deadline passing
// exits 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

type config struct {
	topology, in, out, sub, name string
	batch                        int
	txnTimeout, poll, deadline   time.Duration
	partitions                   int
	drain, fence                 bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.topology, "topology", "", "topology YAML file")
	flag.StringVar(&cfg.in, "in", "", "input topic")
	flag.StringVar(&cfg.out, "out", "", "output topic")
	flag.StringVar(&cfg.sub, "sub", "", "input subscription")
	flag.StringVar(&cfg.name, "name", "p", "prefix of the transaction tags")
	flag.IntVar(&cfg.batch, "batch", 25, "messages per transaction, at most")
	flag.DurationVar(&cfg.txnTimeout, "txn-timeout", 10*time.Second, "Pulsar transaction timeout")
	flag.DurationVar(&cfg.poll, "poll", time.Second, "with -drain: how long a receive waits before the backlog is asked")
	flag.DurationVar(&cfg.deadline, "deadline", 5*time.Minute, "the whole run, at most")
	flag.BoolVar(&cfg.drain, "drain", false, "exit once the backlog is 0")
	flag.BoolVar(&cfg.fence, "fence", true, "before subscribing, wait until no open transaction holds an ack of the subscription")
	flag.IntVar(&cfg.partitions, "partitions", 0, "partitions of the input topic (for -fence)")
	flag.Parse()
	if cfg.topology == "" || cfg.in == "" || cfg.out == "" || cfg.sub == "" || cfg.batch < 1 || (cfg.fence && cfg.partitions < 1) {
		fmt.Fprintln(os.Stderr, "ctpproc: -topology, -in, -out, -sub, -batch >= 1 and, with -fence, -partitions >= 1 are required")
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.deadline)
	defer cancel()
	err := run(ctx, cfg)
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "ctpproc: deadline passed:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "ctpproc:", err)
		os.Exit(1)
	}
}

// say writes one line to stdout in one write.
func say(format string, args ...any) {
	if _, err := os.Stdout.Write(fmt.Appendf(nil, format+"\n", args...)); err != nil {
		fmt.Fprintln(os.Stderr, "ctpproc: stdout:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	topo, err := topology.Load(cfg.topology)
	if err != nil {
		return err
	}
	if cfg.fence {
		t0 := time.Now()
		held, err := fence(ctx, topo, cfg)
		if err != nil {
			return err
		}
		say("fenced %s %d", time.Since(t0).Round(time.Millisecond), held)
	}
	c, err := subscribe(ctx, topo, cfg)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	p, err := producer.New(ctx, topo, producer.Topic(cfg.out), producer.Transactions(true), producer.RequireAllClusters(true))
	for err != nil && strings.Contains(err.Error(), "Not enough non-faulty bookies") && ctx.Err() == nil {
		// A standalone restarted after a SIGKILL refuses ledgers for new
		// topics for a while after it first wrote again.
		time.Sleep(time.Second)
		p, err = producer.New(ctx, topo, producer.Topic(cfg.out), producer.Transactions(true), producer.RequireAllClusters(true))
	}
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	defer p.Close(context.WithoutCancel(ctx))
	say("ready")
	for seq := 1; ; seq++ {
		tag := fmt.Sprintf("%s-t%d", cfg.name, seq)
		n, err := step(ctx, c, p, cfg, tag)
		if err != nil {
			return fmt.Errorf("%s: %w", tag, err)
		}
		if n > 0 || !cfg.drain {
			continue
		}
		seq-- // the tag was not used
		backlog, err := backlogOf(ctx, c)
		if err != nil {
			return err
		}
		if backlog == 0 {
			say("drained")
			return nil
		}
	}
}

// subscribe opens the consumer, waiting while the subscription is still
// held by a consumer of a process that was killed (the broker frees it when
// it sees the connection close).
func subscribe(ctx context.Context, topo *topology.Topology, cfg config) (*consumer.Consumer, error) {
	for {
		c, err := consumer.New(ctx, topo, consumer.Topic(cfg.in), consumer.Subscription(cfg.sub),
			consumer.InitialPosition(consumer.Earliest))
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, consumer.ErrConsumerBusy) {
			return nil, fmt.Errorf("consumer: %w", err)
		}
		fmt.Fprintln(os.Stderr, "ctpproc: subscription busy, retrying:", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("consumer: %w (%w)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// step runs one transaction of up to cfg.batch messages and returns how
// many it processed. Under -drain a receive that waits cfg.poll in vain
// returns 0.
func step(ctx context.Context, c *consumer.Consumer, p *producer.Producer, cfg config, tag string) (int, error) {
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if cfg.drain {
		rctx, cancel = context.WithTimeout(ctx, cfg.poll)
	}
	ms, err := c.ReceiveBatch(rctx, cfg.batch)
	cancel()
	if err != nil {
		if cfg.drain && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return 0, nil
		}
		return 0, fmt.Errorf("receive: %w", err)
	}
	tx, err := p.BeginTxn(producer.TxnTimeout(cfg.txnTimeout))
	if err != nil {
		return 0, err
	}
	lg := &ackLog{tag: tag, seen: map[ackKey]bool{}}
	for i := range ms {
		m := &ms[i]
		v := fmt.Appendf(nil, "out:%s|%s", m.Value, tag)
		if err := tx.Send(&producer.Message{Key: m.Key, Value: v}); err != nil {
			return 0, fmt.Errorf("stage %q: %w", m.Key, err)
		}
		a, err := c.TxnAck(m)
		if err != nil {
			return 0, err
		}
		if err := tx.Ack(loggedAck{TxnAck: a, log: lg}); err != nil {
			return 0, err
		}
	}
	say("commit %s %d", tag, len(ms))
	res, err := tx.Commit(ctx)
	if err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	say("done %s %s", tag, strings.Join(res.Clusters, ","))
	return len(ms), nil
}

// ackLog reports, once per cluster and Pulsar transaction, the Pulsar
// transaction a tag's acks (and so its messages on that cluster) are made
// in. Commit may ack on several clusters at once.
type ackLog struct {
	tag  string
	mu   sync.Mutex // guards seen
	seen map[ackKey]bool
}

type ackKey struct {
	cluster string
	txn     pulsar.TxnID
}

// loggedAck is a consumer's TxnAck that says which Pulsar transaction it
// is made in before it is made.
type loggedAck struct {
	keyroute.TxnAck
	log *ackLog
}

func (a loggedAck) AckWithTxn(txn pulsar.Transaction) error {
	cl, id := a.Cluster(), txn.GetTxnID()
	a.log.mu.Lock()
	if !a.log.seen[ackKey{cl, id}] {
		a.log.seen[ackKey{cl, id}] = true
		say("ack %s %s %d %d", a.log.tag, cl, id.MostSigBits, id.LeastSigBits)
	}
	a.log.mu.Unlock()
	return a.TxnAck.AckWithTxn(txn)
}

// backlogOf sums the subscription's backlog over the clusters.
func backlogOf(ctx context.Context, c *consumer.Consumer) (int64, error) {
	var sum int64
	for _, h := range c.Health(ctx) {
		if h.BacklogErr != nil {
			return 0, fmt.Errorf("backlog of %s: %w", h.Cluster, h.BacklogErr)
		}
		sum += h.Backlog
	}
	return sum, nil
}
