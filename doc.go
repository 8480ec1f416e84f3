// Package keyroute holds what the producers and consumers of one topology
// share: one pulsar-client-go client per cluster.
//
// Data flows topology -> keyroute.Clients -> producer, consumer. A service
// that produces to or reads from many topics builds one Clients from its
// topology and hands it to every producer.New and consumer.New with their
// WithClients options, so that N clusters cost N clients (N connection
// pools, N sets of client goroutines) however many topics it uses, as
// pulsar-client-go's own users share one client. producer.New and
// consumer.New without WithClients open clients of their own, which their
// Close closes.
//
//	cs, err := keyroute.NewClients(topo, keyroute.Transactions(true))
//	defer cs.Close(context.Background())
//	orders, err := producer.New(ctx, topo, producer.Topic("orders"), producer.WithClients(cs))
//	events, err := producer.New(ctx, topo, producer.Topic("events"), producer.WithClients(cs))
//	billing, err := consumer.New(ctx, topo, consumer.Topic("orders"), consumer.Subscription("billing"), consumer.WithClients(cs))
//
// Clients.Update applies a new topology to every producer and consumer
// attached, in the order router/HANDOVER.md, section 9 asks for:
// consumers take the added clusters and keep reading the removed ones,
// then producers move, then consumers drop the removed clusters, each
// read to the end.
//
// Closing a producer or consumer leaves the clients open. Closing the
// Clients closes every producer and consumer still open on it first, then
// the clients; a later New with it returns ErrClosed.
//
// Clients is safe for concurrent use.
package keyroute
