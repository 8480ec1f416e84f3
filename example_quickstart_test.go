// README.md quotes this file from its package clause on, as a program:
// package main, with Example_quickStart as main. readme_test.go fails when
// the two differ. It needs running clusters, so it is compiled, not run.

package keyroute_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

func Example_quickStart() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	const topic = "persistent://public/default/events"

	// The clusters: names, URLs, weights, tokens and TLS files.
	topo, err := topology.Load("clusters.yaml")
	if err != nil {
		return err // names each cluster and field at fault
	}

	// KeyBasedBatching puts one key in each batch, so that a KeyShared
	// subscription can hand each key to one consumer.
	p, err := producer.New(ctx, topo, producer.Topic(topic), producer.KeyBasedBatching(true))
	if err != nil {
		return err // names each cluster that could not be opened
	}
	defer p.Close(ctx)

	// Send waits for the broker's acknowledgement.
	id, err := p.Send(ctx, &producer.Message{Key: "user-42", Value: []byte("signed up")})
	if err != nil {
		return fmt.Errorf("send (safe to retry: %t): %w", producer.NotWritten(err), err)
	}
	fmt.Println("written at", id) // cluster/partition/ledger:entry:batch

	// SendAsync batches; each callback runs exactly once, a key's in call order.
	for i := range 3 {
		msg := &producer.Message{Key: "user-42", Value: fmt.Appendf(nil, "click %d", i)}
		p.SendAsync(ctx, msg, func(id producer.ID, m *producer.Message, err error) {
			if err != nil {
				log.Printf("%s: %v (safe to retry: %t)", m.Key, err, producer.NotWritten(err))
			}
		})
	}
	if err := p.Flush(ctx); err != nil { // waits until every callback has run
		return err
	}

	// One subscription on every cluster, read as one stream. A new
	// subscription starts at Latest unless told otherwise.
	c, err := consumer.New(ctx, topo,
		consumer.Topic(topic),
		consumer.Subscription("billing"),
		consumer.Type(consumer.KeyShared),
		consumer.InitialPosition(consumer.Earliest))
	if err != nil {
		return err
	}
	defer c.Close(ctx)

	readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		m, err := c.Receive(readCtx)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil // nothing more for now
		}
		if err != nil {
			return err
		}
		fmt.Printf("%s %s=%s\n", m.ID, m.Key, m.Value) // a key's messages in send order
		if err := c.Ack(ctx, m); err != nil {
			return err // names the cluster
		}
	}
}
