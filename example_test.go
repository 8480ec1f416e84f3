package keyroute_test

import (
	"context"
	"log"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// One client per cluster for every producer and consumer of a service.
// (It needs running clusters, so it is compiled but not run; e2e/parity
// runs the same calls.)
func ExampleNewClients() {
	ctx := context.Background()
	topo, err := topology.Load("clusters.yaml")
	if err != nil {
		log.Fatal(err)
	}
	cs, err := keyroute.NewClients(topo, keyroute.Transactions(true))
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close(context.Background()) // closes whatever is still open on it, then the clients

	orders, err := producer.New(ctx, topo, producer.Topic("orders"), producer.WithClients(cs), producer.Transactions(true))
	if err != nil {
		log.Fatal(err)
	}
	events, err := producer.New(ctx, topo, producer.Topic("events"), producer.WithClients(cs))
	if err != nil {
		log.Fatal(err)
	}
	billing, err := consumer.New(ctx, topo, consumer.Topic("orders"), consumer.Subscription("billing"), consumer.WithClients(cs))
	if err != nil {
		log.Fatal(err)
	}
	_, _, _ = orders, events, billing
}
