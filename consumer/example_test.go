package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/consumer/consumertest"
	"github.com/keyroute/keyroute/topology"
)

// One subscription over every cluster of a topology, read as one stream:
// here two fake clusters (package consumertest); on real ones the topology
// comes from topology.Load and the fake's Opt is left out.
func ExampleNew() {
	ctx := context.Background()
	fake := consumertest.New(consumertest.Partitions(2))
	c, err := consumer.New(ctx, consumertest.Topology("east", "west"),
		consumer.Topic("persistent://public/default/events"),
		consumer.Subscription("billing"), fake.Opt())
	if err != nil {
		log.Fatal(err) // names each cluster that could not be subscribed
	}
	defer c.Close(context.Background())

	_ = fake.Cluster("east").Publish(0, consumertest.Message{Key: "user-1", Value: []byte("a")}, consumertest.Message{Key: "user-1", Value: []byte("b")})
	_ = fake.Cluster("west").Publish(1, consumertest.Message{Key: "user-2", Value: []byte("c")})

	var got []string
	for range 3 {
		m, err := c.Receive(ctx)
		if err != nil {
			log.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s: %s = %s", m.ID, m.Key, m.Value)) // cluster/partition/ledger:entry:batch
		if err := c.Ack(ctx, m); err != nil {
			log.Print(err) // names the cluster
		}
	}
	slices.Sort(got) // the clusters' messages interleave; each partition's keep their order
	for _, g := range got {
		fmt.Println(g)
	}
	fmt.Println("east backlog:", fake.Cluster("east").Backlog("billing"))
	// Output:
	// east/0/1:0:-1: user-1 = a
	// east/0/1:1:-1: user-1 = b
	// west/1/1:0:-1: user-2 = c
	// east backlog: 0
}

// Chan gives the same stream as a channel, closed by Close.
func ExampleConsumer_Chan() {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("east"), consumer.Topic("events"),
		consumer.Subscription("audit"), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		_ = fake.Cluster("east").Publish(0, consumertest.Message{Key: "k", Value: fmt.Append(nil, i)})
	}
	n := 0
	for m := range c.Chan() {
		fmt.Printf("%s %s\n", m.Key, m.Value)
		_ = c.Ack(ctx, m)
		if n++; n == 3 {
			_ = c.Close(context.Background()) // ends the loop: Chan is closed
		}
	}
	// Output:
	// k 0
	// k 1
	// k 2
}

// A message that could not be processed is nacked: it comes again, with
// its redelivery count one higher (the fake redelivers at once; Pulsar
// after NackRedeliveryDelay).
func ExampleConsumer_Nack() {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("east"), consumer.Topic("events"),
		consumer.Subscription("billing"), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(context.Background())
	_ = fake.Cluster("east").Publish(0, consumertest.Message{Key: "order-7", Value: []byte("pay")})

	m, _ := c.Receive(ctx)
	fmt.Println(m.Key, "delivery", m.RedeliveryCount)
	_ = c.Nack(m)
	m, _ = c.Receive(ctx)
	fmt.Println(m.Key, "delivery", m.RedeliveryCount)
	_ = c.Ack(ctx, m)
	for _, e := range fake.Events() {
		if e.Op != consumertest.OpSubscribe {
			fmt.Println(e)
		}
	}
	// Output:
	// order-7 delivery 0
	// order-7 delivery 1
	// nack east/0:0 billing
	// ack east/0:0 billing
}

// On an Exclusive or Failover subscription one cumulative acknowledgement
// covers its partition up to the message named.
func ExampleConsumer_AckCumulative() {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("east"), consumer.Topic("events"),
		consumer.Subscription("billing"), consumer.Type(consumer.Failover), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(context.Background())
	for i := range 3 {
		_ = fake.Cluster("east").Publish(0, consumertest.Message{Key: "k", Value: fmt.Append(nil, i)})
	}
	var last *consumer.Message
	for range 3 {
		last, _ = c.Receive(ctx)
	}
	fmt.Println("backlog before:", fake.Cluster("east").Backlog("billing"))
	if err := c.AckCumulative(ctx, last); err != nil {
		log.Fatal(err)
	}
	fmt.Println("backlog after:", fake.Cluster("east").Backlog("billing"))
	// Output:
	// backlog before: 3
	// backlog after: 0
}

// SeekByTime moves the subscription on every cluster: messages published
// from then on come again, and nothing read before the seek comes after
// it.
func ExampleConsumer_SeekByTime() {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("east"), consumer.Topic("events"),
		consumer.Subscription("replay"), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(context.Background())
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for i, v := range []string{"first", "second", "third"} {
		_ = fake.Cluster("east").Publish(0, consumertest.Message{Key: "k", Value: []byte(v), PublishTime: t0.Add(time.Duration(i) * time.Minute)})
	}
	for range 3 {
		m, _ := c.Receive(ctx)
		_ = c.Ack(ctx, m)
	}
	if err := c.SeekByTime(ctx, t0.Add(time.Minute)); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		m, _ := c.Receive(ctx)
		fmt.Printf("again: %s (published %s)\n", m.Value, m.PublishTime.Format("15:04"))
	}
	// Output:
	// again: second (published 12:01)
	// again: third (published 12:02)
}

// ReceiveBatch returns what the clusters hold, up to max, in one
// allocation; it waits only while there is nothing.
func ExampleConsumer_ReceiveBatch() {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("east"), consumer.Topic("events"),
		consumer.Subscription("bulk"), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(context.Background())
	for i := range 5 {
		_ = fake.Cluster("east").Publish(0, consumertest.Message{Key: "k", Value: fmt.Append(nil, i)})
	}
	var values []string
	for len(values) < 5 {
		ms, err := c.ReceiveBatch(ctx, 100)
		if err != nil {
			log.Fatal(err)
		}
		for i := range ms {
			values = append(values, string(ms[i].Value))
			_ = c.Ack(ctx, &ms[i])
		}
	}
	fmt.Println(values, "backlog", fake.Cluster("east").Backlog("bulk"))
	// Output:
	// [0 1 2 3 4] backlog 0
}

// Against real clusters: the topology from its file, Receive until Close.
// (It needs running clusters, so it is compiled but not run; the e2e
// suites run the same calls.)
func ExampleNew_clusters() {
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
		log.Fatal(err)
	}
	defer c.Close(context.Background())
	for {
		m, err := c.Receive(ctx)
		if errors.Is(err, consumer.ErrClosed) {
			return
		}
		if err != nil {
			log.Fatal(err)
		}
		if err := c.Ack(ctx, m); err != nil {
			log.Print(err)
		}
	}
}

// Per cluster: reachable or not, what was delivered and acknowledged, the
// lag and (with an admin URL in the topology) the backlog.
func ExampleConsumer_Health() {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("east", "west"), consumer.Topic("events"),
		consumer.Subscription("billing"), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(context.Background())
	_ = fake.Cluster("west").Publish(0, consumertest.Message{Key: "k"})
	m, _ := c.Receive(ctx)
	_ = c.Ack(ctx, m)
	for _, h := range c.Health(ctx) {
		fmt.Printf("%s connected=%v delivered=%d acked=%d backlog=%d\n",
			h.Cluster, h.Connected, h.Delivered, h.Acked, h.Backlog)
	}
	// Output:
	// east connected=true delivered=0 acked=0 backlog=0
	// west connected=true delivered=1 acked=1 backlog=0
}

// Typed decodes each value with the Consumer's schema: the read side of
// the producer's Typed[T].
func ExampleTyped() {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("east"), consumer.Topic("orders"),
		consumer.Subscription("billing"), consumer.Schema(pulsar.NewStringSchema(nil)), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(context.Background())
	typed, err := consumer.NewTyped[string](c)
	if err != nil {
		log.Fatal(err)
	}
	_ = fake.Cluster("east").Publish(0, consumertest.Message{Key: "order-1", Value: []byte("paid")})
	m, v, err := typed.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Key, v)
	_ = c.Ack(ctx, m)
	// Output:
	// order-1 paid
}
