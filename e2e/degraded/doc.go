// Package degraded holds the degraded-start suite: five real local Pulsar
// clusters, one of them hung (SIGSTOP) or killed (SIGKILL) before
// producer.New. It checks that New returns within a bound derived from
// StartTimeout and a healthy New measured in the same spec, that the four
// other clusters carry their keys at no less than 0.95 of the rate they
// carried after a healthy start in the same spec (a fixed offered rate),
// that the fifth cluster's keys fail fast while it is out, and that it
// joins by itself within a bound derived from the producer's and the
// topology's settings once it is resumed or restarted, after which its
// keys are written there. It reports the start and join times.
//
// The consumer's specs do the same for consumer.New, alone and through
// shared keyroute.Clients: New returns within a bound derived from
// StartTimeout and a healthy New in the same spec, the four other
// clusters deliver a fixed offered load at no less than 0.95 of their
// rate after a healthy start, and the fifth joins by itself within a
// bound derived from the settings once it is back, reading the messages
// written there before its subscription existed. Run it with
// `go test -tags e2e -count=1 -v ./e2e/degraded/` (add
// `-args -ginkgo.focus=consumer` for the consumer's alone).
package degraded
