// Package keyroutecmd is the end-to-end suite of the keyroute command
// (cmd/keyroute): it builds the binary and runs it against two test beds
// it starts, two plain clusters and two secure ones (TLS with a client
// certificate and a token on both the service and the admin URL), through
// topology files the beds write. On each bed it creates a topic with a
// different partition count per cluster, describes it, places keys,
// produces them and checks that each message landed where placement said,
// checks health and the subscription's backlog per cluster, consumes the
// messages back with their keys, values and properties, and deletes the
// topic; and it checks that a cluster whose admin URL or token is wrong
// (set through the SDK's environment overrides) is named in the error
// while the other cluster still answers. On the plain bed it plans four
// changes in a row with keyroute plan (add, reweight, growth, drain) and
// applies each with a producer's Update (the growth: found by its
// partition discovery) while sending a known key set, then holds the plan
// to what happened: the slots and markers the Update reports, and the
// keys written, and read back, at another cluster or partition, against
// the plan's exact count from -keys.
//
// The specs are behind the e2e build tag:
//
//	go test -tags e2e -count=1 -timeout 30m ./e2e/keyroutecmd/
package keyroutecmd
