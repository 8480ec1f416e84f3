// Package consumerfaults is the fault suite of the keyroute consumer: five
// real local Pulsar clusters, a steady keyed load on all five from a
// keyroute producer, and ONE keyroute consumer reading and acknowledging
// the merged stream while one cluster is killed (SIGKILL) and restarted.
//
// It checks that the consumer keeps taking the other four clusters'
// messages at the rate the producer writes them while the fifth is dead
// (delivery rates per cluster, from each message's ID, beside the
// producer's acknowledgements in the same window), that Health
// reports the killed cluster not connected within a bound derived from
// ProbeInterval and the operation timeout, that after the restart every
// message the producer had acknowledged arrives (those written before the
// kill and after it), in per-key order, and it counts and classifies the
// duplicates by what had become of the first copy's acknowledgement.
// Timing bounds come from documented settings or from figures measured in
// the same spec, never from fixed constants. Run it with
//
//	go test -tags e2e -count=1 -v -timeout 40m ./e2e/consumerfaults/
package consumerfaults
