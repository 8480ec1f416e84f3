// Package faults holds the fault suite: five real local Pulsar clusters
// under a steady load while one of them is killed (SIGKILL), hung
// (SIGSTOP) or restarted. It checks that the other clusters keep their
// throughput, that messages for the broken cluster get typed errors within
// the configured bound, that every acknowledged message is consumed exactly
// once and in key order, and reports detection and recovery times. Run it
// with `go test -tags e2e -v ./e2e/faults/`.
package faults
