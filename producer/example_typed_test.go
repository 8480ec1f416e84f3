package producer_test

import (
	"context"
	"fmt"
	"log"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

// Typed values: the Producer registers the schema on every cluster, and
// Typed encodes each value with it. (Over producertest's fakes; against
// real clusters, leave fake.Opt() out.)
func ExampleTyped() {
	type Order struct {
		ID    int    `json:"id"`
		Items string `json:"items"`
	}
	ctx := context.Background()
	fake := producertest.New()
	schema := pulsar.NewJSONSchema(`{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},{"name":"items","type":"string"}]}`, nil)
	p, err := producer.New(ctx, producertest.Topology("east"), producer.Topic("orders"),
		producer.Schema(schema), fake.Opt())
	if err != nil {
		log.Fatal(err) // names a cluster whose topic holds an incompatible schema
	}
	defer p.Close(ctx)
	orders, err := producer.NewTyped[Order](p)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := orders.Send(ctx, "order-7", Order{ID: 7, Items: "tea, scones"}); err != nil {
		log.Fatal(err)
	}
	for _, m := range fake.Cluster("east").Messages() {
		fmt.Printf("%s: %s\n", m.Key, m.Value)
	}
	// Output:
	// order-7: {"id":7,"items":"tea, scones"}
}
