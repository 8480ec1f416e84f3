// Package producer holds the end-to-end suite of the routing producer: it
// starts five real local Pulsar clusters and checks delivery, order and
// placement by consuming everything back with plain pulsar-client-go. Run it
// with `go test -tags e2e ./e2e/producer/`.
package producer
