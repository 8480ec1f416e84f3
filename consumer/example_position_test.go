package consumer_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/consumer/consumertest"
)

// A reader that keeps its results in a store of its own saves there, with
// each result, the ID of the last message it processed on each cluster
// and partition, as text (ID.String, MarshalText). After a restart it
// resumes just after them with ParseID and StartAfter, whatever the
// subscription acknowledged: this reader acknowledges nothing, so
// without StartAfter every message would come again. A partition no
// position names (west/0 here) is read from the subscription's cursor.
// The fake positions its own clusters; real ones need an AdminURL.
func ExampleStartAfter() {
	ctx := context.Background()
	fake := consumertest.New(consumertest.Partitions(2))
	topo := consumertest.Topology("east", "west")
	opts := []consumer.Opt{consumer.Topic("events"), consumer.Subscription("billing"),
		consumer.InitialPosition(consumer.Earliest), fake.Opt()}
	publish := func(cluster string, partition, i int) {
		v := fmt.Sprintf("%s/%d #%d", cluster, partition, i)
		_ = fake.Cluster(cluster).Publish(partition, consumertest.Message{Key: "k", Value: []byte(v)})
	}
	for i := range 2 {
		publish("east", 0, i)
		publish("east", 1, i)
		publish("west", 1, i)
	}

	store := map[string]string{} // "cluster/partition": the last ID processed there
	c, err := consumer.New(ctx, topo, opts...)
	if err != nil {
		log.Fatal(err)
	}
	for range 6 {
		m, err := c.Receive(ctx)
		if err != nil {
			log.Fatal(err)
		}
		text, err := m.ID.MarshalText() // ID.String, checked
		if err != nil {
			log.Fatal(err)
		}
		store[fmt.Sprintf("%s/%d", m.ID.Cluster, m.ID.Partition)] = string(text) // with the result
	}
	_ = c.Close(ctx)

	// While the reader is down, more comes.
	publish("east", 0, 2)
	publish("east", 1, 2)
	publish("west", 1, 2)
	publish("west", 0, 0)

	var ids []consumer.ID
	for _, text := range store {
		id, err := consumer.ParseID(text)
		if err != nil {
			log.Fatal(err) // ErrBadPosition: not an ID's text
		}
		ids = append(ids, id)
	}
	c, err = consumer.New(ctx, topo, append(opts, consumer.StartAfter(ids...))...)
	if err != nil {
		log.Fatal(err) // names the cluster and partition it could not place
	}
	defer c.Close(context.Background())
	var got []string
	for range 4 {
		m, err := c.Receive(ctx)
		if err != nil {
			log.Fatal(err)
		}
		from, ok := store[fmt.Sprintf("%s/%d", m.ID.Cluster, m.ID.Partition)]
		if !ok {
			from = "the cursor"
		}
		got = append(got, fmt.Sprintf("%s after %s", m.Value, from))
		_ = c.Ack(ctx, m)
	}
	slices.Sort(got) // the clusters' messages interleave
	for _, g := range got {
		fmt.Println(g)
	}
	fmt.Println("backlog:", fake.Cluster("east").Backlog("billing"), fake.Cluster("west").Backlog("billing"))
	// Output:
	// east/0 #2 after east/0/1:1:-1
	// east/1 #2 after east/1/1:1:-1
	// west/0 #0 after the cursor
	// west/1 #2 after west/1/1:1:-1
	// backlog: 0 0
}

// SeekByID moves the subscription on each partition an ID names to just
// after that message: here back, so that what followed it comes again.
// The cluster's subscription is closed, its cursor moved, and it is
// subscribed again (the fake's Events show it); other clusters are not
// touched.
func ExampleConsumer_SeekByID() {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("east"), consumer.Topic("events"),
		consumer.Subscription("replay"), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, v := range []string{"first", "second", "third", "fourth"} {
		_ = fake.Cluster("east").Publish(0, consumertest.Message{Key: "k", Value: []byte(v)})
	}
	var second consumer.ID
	for range 4 {
		m, _ := c.Receive(ctx)
		if string(m.Value) == "second" {
			second = m.ID
		}
		_ = c.Ack(ctx, m) // acknowledge before the seek
	}
	before := len(fake.Events())
	if err := c.SeekByID(ctx, second); err != nil {
		log.Fatal(err) // names the cluster and partition
	}
	for _, e := range fake.Events()[before:] {
		fmt.Println(e)
	}
	for range 2 {
		m, _ := c.Receive(ctx)
		fmt.Printf("again: %s (%s)\n", m.Value, m.ID)
		_ = c.Ack(ctx, m)
	}
	// Output:
	// close east replay
	// reset east/0:1 replay
	// subscribe east replay
	// again: third (east/0/1:2:-1)
	// again: fourth (east/0/1:3:-1)
}
