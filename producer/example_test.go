package producer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// A producer over the clusters of a topology file, sending with a key and
// waiting for the acknowledgement. (It needs running clusters, so it is
// compiled but not run; the e2e suites run the same calls.)
func ExampleNew() {
	ctx := context.Background()
	topo, err := topology.Load("clusters.yaml")
	if err != nil {
		log.Fatal(err)
	}
	p, err := producer.New(ctx, topo, producer.Topic("persistent://public/default/events"))
	if err != nil {
		log.Fatal(err) // names each cluster that could not be opened
	}
	defer p.Close(ctx)

	id, err := p.Send(ctx, &producer.Message{Key: "user-42", Value: []byte("signed up")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("written at", id) // cluster/partition/ledger:entry:batch
}

// Batched sends: the callbacks of one key come in call order, on the
// cluster's callback goroutine; Flush waits for every callback.
func ExampleProducer_SendAsync() {
	ctx := context.Background()
	topo, _ := topology.Load("clusters.yaml")
	p, err := producer.New(ctx, topo, producer.Topic("persistent://public/default/events"),
		producer.Linger(5*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)

	for i := range 1000 {
		msg := &producer.Message{Key: fmt.Sprint("user-", i%10), Value: []byte("click")}
		p.SendAsync(ctx, msg, func(id producer.ID, m *producer.Message, err error) {
			if err != nil {
				log.Printf("%s: %v (safe to resend: %v)", m.Key, err, producer.NotWritten(err))
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		log.Fatal(err)
	}
}

// A transaction: staged in memory, written and committed at the end of
// fn, one Pulsar transaction per touched cluster.
func ExampleProducer_RunInTxn() {
	ctx := context.Background()
	topo, _ := topology.Load("clusters.yaml")
	p, err := producer.New(ctx, topo, producer.Topic("persistent://public/default/orders"),
		producer.Transactions(true))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)

	err = p.RunInTxn(ctx, func(ctx context.Context, tx *producer.Txn) error {
		for _, line := range []string{"item-1", "item-2"} {
			if err := tx.Send(&producer.Message{Key: "order-7", Value: []byte(line)}); err != nil {
				return err // aborts: nothing was sent
			}
		}
		return nil
	})
	var partial *producer.PartialCommitError
	if errors.As(err, &partial) {
		log.Printf("committed on %v only", partial.Committed)
	}

	// Imports: 1,000 messages per transaction.
	msgs := make([]*producer.Message, 10_000)
	for i := range msgs {
		msgs[i] = &producer.Message{Key: fmt.Sprint("sku-", i), Value: []byte("stock")}
	}
	res, err := p.SendTxnBulk(ctx, msgs, 1000)
	log.Printf("%d messages committed in %d transactions; not committed: %v (%v)", res.Committed, res.Txns, res.NotCommitted, err)
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
