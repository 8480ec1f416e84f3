// Package security is the end-to-end security suite: it starts two real
// local Pulsar clusters in the test bed's secure mode (TLS only with
// client certificates, token authentication required; see
// internal/testbed Options.Secure) and checks that the producer works with
// a correct per-cluster TLS and token configuration, and that a wrong
// token, a plain-text URL, a missing CA or a missing client certificate on
// ONE cluster makes producer.New fail with an error that names exactly
// that cluster and never contains a token. It also checks that tokens
// supplied through KEYROUTE_CLUSTER_<NAME>_TOKEN work and are redacted
// whenever a topology is printed.
//
// Two clusters are enough: every check is "this cluster right, that one
// wrong" in one topology, and nothing here depends on the cluster count;
// five secure JVMs would add startup time and ~0.8 GB on a shared machine
// for no extra coverage.
//
// The specs are behind the e2e build tag:
//
//	go test -tags e2e -count=1 -timeout 30m ./e2e/security/
package security
