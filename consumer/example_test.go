package consumer_test

import (
	"context"
	"errors"
	"log"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/topology"
)

// One subscription over every cluster of a topology, read as one stream.
// (It needs running clusters, so it is compiled but not run; the e2e
// suites run the same calls.)
func ExampleNew() {
	ctx := context.Background()
	topo, err := topology.Load("clusters.yaml")
	if err != nil {
		log.Fatal(err)
	}
	c, err := consumer.New(ctx, topo,
		consumer.Topic("persistent://public/default/events"),
		consumer.Subscription("billing"),
		consumer.Type(consumer.KeyShared),
		consumer.InitialPosition(consumer.Earliest))
	if err != nil {
		log.Fatal(err) // names each cluster that could not be subscribed
	}
	defer c.Close()

	for {
		m, err := c.Receive(ctx)
		if errors.Is(err, consumer.ErrClosed) {
			return
		}
		if err != nil {
			log.Fatal(err)
		}
		log.Printf("%s: %s = %s", m.ID, m.Key, m.Value) // cluster/partition/ledger:entry:batch
		if err := c.Ack(ctx, m); err != nil {
			log.Print(err) // names the cluster
		}
	}
}

// Per cluster: reachable or not, what was received and acknowledged, the
// lag and (with an admin URL in the topology) the backlog.
func ExampleConsumer_Health() {
	ctx := context.Background()
	topo, _ := topology.Load("clusters.yaml")
	c, err := consumer.New(ctx, topo, consumer.Topic("events"), consumer.Subscription("billing"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, h := range c.Health(ctx) {
		log.Printf("%s connected=%v received=%d acked=%d lag=%s backlog=%d",
			h.Cluster, h.Connected, h.Received, h.Acked, h.Lag, h.Backlog)
	}
}
