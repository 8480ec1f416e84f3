package producertest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

// A Producer over two fake clusters, one of which holds its
// acknowledgements back until it is released; then what each cluster
// wrote, and what happened, in order.
func Example() {
	ctx := context.Background()
	fake := producertest.New(producertest.Partitions(2))
	west := fake.Cluster("west")
	west.Hold()
	p, err := producer.New(ctx, producertest.Topology("east", "west"),
		producer.Topic("persistent://public/default/events"), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)

	for i := range 4 {
		p.SendAsync(ctx, &producer.Message{Key: fmt.Sprint("user-", i), Value: []byte("click")}, nil)
	}
	fmt.Println("west holds", west.Partition(0).Held()+west.Partition(1).Held())
	west.Release()
	if err := p.Flush(ctx); err != nil {
		log.Fatal(err)
	}

	for _, c := range p.Clusters() {
		for _, m := range fake.Cluster(c).Messages() {
			fmt.Printf("%s/%d %s %s at %v\n", m.Cluster, m.Partition, m.Key, m.Value, m.ID)
		}
	}
	for _, e := range fake.Events() {
		fmt.Println(e)
	}
	// Output:
	// west holds 2
	// east/0 user-1 click at 1:0:0:0
	// east/0 user-3 click at 1:1:0:0
	// west/0 user-0 click at 1:0:0:0
	// west/1 user-2 click at 1:0:1:0
	// send west/0 "user-0"
	// send east/0 "user-1"
	// ack east/0 "user-1"
	// send west/1 "user-2"
	// send east/0 "user-3"
	// ack east/0 "user-3"
	// ack west/0 "user-0"
	// ack west/1 "user-2"
}
