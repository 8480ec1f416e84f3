// Package consumer is the e2e suite of the keyroute consumer: five real
// local Pulsar clusters, topics written by keyroute's producer, and
// consumer.New reading them back as one stream.
//
// It checks, each on real clusters:
//
//   - order and completeness: 200,000 messages over 10,000 keys, read by
//     ONE consumer: every message the producer acknowledged arrives, in
//     per-key send order, none lost, no duplicate; Health then counts them
//     all delivered and acknowledged, and the backlog on every cluster
//     drains to zero; the figures (lost, reordered, duplicates, elapsed,
//     msg/s) are printed;
//   - a consumer process SIGKILLed after a random number of acknowledged
//     messages and started again on the same subscription: together the
//     two runs take every message, and what the second run takes again
//     had not been acknowledged (AckWithResponse) by the first; per-key
//     order within each run; with the producer's batching, the exception
//     pulsar-client-go makes for a batch acknowledged in part is counted;
//   - KeyShared with two consumer instances: each key reaches one of them
//     only, in order, and everything arrives; once one closes, the other
//     takes every key;
//   - SeekByTime: to a time before the production, every message comes
//     again from the first on every cluster; to a time between two
//     productions, exactly the later one comes again;
//   - bad input: no topic, no subscription, a subscription held on one
//     cluster by a consumer of another type, and a topic missing on one
//     of the five clusters each fail New with the sentinel or a
//     *consumer.ClusterError naming that cluster.
//
// Every spec closes what it opened and checks that no goroutine outlives
// it, but for those suite_test.go names with the reason (pulsar-client-go's,
// and the admin HTTP connections the consumer leaves open, which are
// counted and printed). Timing bounds come from documented settings or from figures measured
// in the same spec, never from fixed constants. Run it with
//
//	go test -tags e2e -count=1 -v -timeout 40m ./e2e/consumer/
package consumer
