package producer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
	"github.com/keyroute/keyroute/topology"
)

// A producer over two clusters, sending with a key and waiting for the
// acknowledgement. The clusters here are producertest's fakes; against
// real ones, the topology comes from a file (as in the Clusters example) and
// fake.Opt() is left out.
func ExampleNew() {
	ctx := context.Background()
	fake := producertest.New(producertest.Partitions(4))
	p, err := producer.New(ctx, producertest.Topology("east", "west"),
		producer.Topic("persistent://public/default/events"), fake.Opt())
	if err != nil {
		log.Fatal(err) // names each cluster that could not be opened
	}
	defer p.Close(ctx)

	id, err := p.Send(ctx, &producer.Message{Key: "user-42", Value: []byte("signed up")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("written at", id) // cluster/partition/ledger:entry:batch
	for _, m := range fake.Cluster(id.Cluster).Partition(id.Partition).Messages() {
		fmt.Printf("%s holds %s=%q\n", id.Cluster, m.Key, m.Value)
	}
	// Output:
	// written at east/0/1:0:0
	// east holds user-42="signed up"
}

// The same against running clusters, named in a topology file. (It needs
// them, so it is compiled but not run; the e2e suites run the same
// calls.)
func ExampleNew_clusters() {
	ctx := context.Background()
	topo, err := topology.Load("clusters.yaml")
	if err != nil {
		log.Fatal(err)
	}
	p, err := producer.New(ctx, topo, producer.Topic("persistent://public/default/events"))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)
	if _, err := p.Send(ctx, &producer.Message{Key: "user-42", Value: []byte("signed up")}); err != nil {
		log.Fatal(err)
	}
}

// Batched sends: the callbacks of one key come in call order, on the
// cluster's callback goroutine; Flush waits for every callback.
func ExampleProducer_SendAsync() {
	ctx := context.Background()
	fake := producertest.New(producertest.Partitions(2))
	p, err := producer.New(ctx, producertest.Topology("east", "west"),
		producer.Topic("persistent://public/default/events"), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)

	var mu sync.Mutex
	seen := map[string][]string{} // values by key, in callback order
	for i := range 9 {
		msg := &producer.Message{Key: fmt.Sprint("user-", i%3), Value: fmt.Appendf(nil, "click-%d", i)}
		p.SendAsync(ctx, msg, func(id producer.ID, m *producer.Message, err error) {
			if err != nil {
				log.Printf("%s: %v (safe to resend: %v)", m.Key, err, producer.NotWritten(err))
				return
			}
			mu.Lock()
			seen[m.Key] = append(seen[m.Key], string(m.Value)+"@"+id.Cluster)
			mu.Unlock()
		})
	}
	if err := p.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	for _, key := range slices.Sorted(maps.Keys(seen)) {
		fmt.Println(key, strings.Join(seen[key], " "))
	}
	// Output:
	// user-0 click-0@west click-3@west click-6@west
	// user-1 click-1@east click-4@east click-7@east
	// user-2 click-2@west click-5@west click-8@west
}

// A transaction: staged in memory, written and committed at the end of
// fn, one Pulsar transaction per touched cluster. A consumer sees the
// messages once the transaction has committed, and never those of one
// that fn gave up.
func ExampleProducer_RunInTxn() {
	ctx := context.Background()
	fake := producertest.New()
	p, err := producer.New(ctx, producertest.Topology("east", "west"),
		producer.Topic("persistent://public/default/orders"), producer.Transactions(true), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)

	order := func(key string, lines ...string) func(context.Context, *producer.Txn) error {
		return func(ctx context.Context, tx *producer.Txn) error {
			for _, line := range lines {
				if err := tx.Send(&producer.Message{Key: key, Value: []byte(line)}); err != nil {
					return err
				}
			}
			if len(lines) > 2 {
				return errors.New("too many lines") // aborts: nothing was sent
			}
			return nil
		}
	}
	fmt.Println(p.RunInTxn(ctx, order("order-7", "item-1", "item-2")))
	fmt.Println(p.RunInTxn(ctx, order("order-8", "item-1", "item-2", "item-3")))
	for _, c := range p.Clusters() {
		for _, m := range fake.Cluster(c).Messages() {
			fmt.Printf("%s: %s %s\n", c, m.Key, m.Value)
		}
	}
	// Output:
	// <nil>
	// too many lines
	// west: order-7 item-1
	// west: order-7 item-2
}

// A transaction is atomic within a cluster, not across clusters: when a
// cluster fails to commit after another has committed, the error says
// which is which.
func ExamplePartialCommitError() {
	ctx := context.Background()
	fake := producertest.New()
	fake.Cluster("west").FailCommits(errors.New("coordinator gone"))
	p, err := producer.New(ctx, producertest.Topology("east", "west"),
		producer.Topic("persistent://public/default/orders"), producer.Transactions(true), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)

	err = p.RunInTxn(ctx, func(ctx context.Context, tx *producer.Txn) error {
		for _, key := range []string{"order-7", "order-8"} {
			if err := tx.Send(&producer.Message{Key: key, Value: []byte("paid")}); err != nil {
				return err
			}
		}
		return nil
	})
	var partial *producer.PartialCommitError
	if errors.As(err, &partial) {
		fmt.Println("committed on", partial.Committed, "failed on", partial.Failed)
	}
	// Output:
	// committed on [east] failed on [west]
}

// Imports: many messages in transactions of up to perTxn messages each,
// one partition per transaction.
func ExampleProducer_SendTxnBulk() {
	ctx := context.Background()
	fake := producertest.New()
	p, err := producer.New(ctx, producertest.Topology("east", "west"),
		producer.Topic("persistent://public/default/stock"), producer.Transactions(true), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)

	msgs := make([]*producer.Message, 10)
	for i := range msgs {
		msgs[i] = &producer.Message{Key: fmt.Sprint("sku-", i), Value: []byte("stock")}
	}
	res, err := p.SendTxnBulk(ctx, msgs, 3)
	fmt.Printf("%d messages committed in %d transactions; not committed: %v (%v)\n",
		res.Committed, res.Txns, res.NotCommitted, err)
	for _, c := range p.Clusters() {
		fmt.Println(c, len(fake.Cluster(c).Messages()), "messages visible")
	}
	// Output:
	// 10 messages committed in 4 transactions; not committed: [] (<nil>)
	// east 4 messages visible
	// west 6 messages visible
}

// countObserver counts outcomes by cluster and reason. An Observer runs
// on hot paths: it must be safe for concurrent use and quick.
type countObserver struct {
	mu     sync.Mutex
	counts map[string]int
}

func (o *countObserver) OnStart(context.Context, *producer.Event) map[string]string { return nil }

func (o *countObserver) OnDone(ev *producer.Event) {
	outcome := "ok"
	if ev.Err != nil {
		outcome = producer.Reason(ev.Err).String()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.counts[ev.Cluster+" "+outcome]++
}

// An observer sees every message's outcome: here the acknowledgements of
// one cluster never come, and its messages time out.
func ExampleObserve() {
	ctx := context.Background()
	fake := producertest.New()
	fake.Cluster("west").Hold()
	obs := &countObserver{counts: map[string]int{}}
	p, err := producer.New(ctx, producertest.Topology("east", "west"),
		producer.Topic("persistent://public/default/events"), producer.Observe(obs), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)
	for i := range 10 {
		p.SendAsync(ctx, &producer.Message{Key: fmt.Sprint("user-", i)}, nil)
	}
	fake.Cluster("west").Partition(0).Fail(pulsar.ErrSendTimeout)
	if err := p.Flush(ctx); err != nil {
		log.Fatal(err)
	}

	obs.mu.Lock()
	defer obs.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(obs.counts)) {
		fmt.Printf("%s: %d\n", k, obs.counts[k])
	}
	// Output:
	// east ok: 7
	// west send_timeout: 3
}

// What to do with an error: resend only what was definitely not written,
// and count failures by a stable code rather than by their text.
func ExampleNotWritten() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var p *producer.Producer // a nil producer fails every call, cleanly
	_, err := p.Send(ctx, &producer.Message{Key: "k"})
	fmt.Println(producer.NotWritten(err), producer.Reason(err))

	timeout := &producer.SendError{Key: "k", Cluster: "east", Err: producer.ErrSendTimeout}
	fmt.Println(producer.NotWritten(timeout), producer.Reason(timeout))
	// Output:
	// true nil_producer
	// false send_timeout
}
