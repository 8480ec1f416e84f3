package keyroute

import "github.com/apache/pulsar-client-go/pulsar"

// WatchRetiredCloses makes closing a client that Update retired call
// watch first, until the returned restore is called.
func WatchRetiredCloses(watch func(pulsar.Client)) (restore func()) {
	old := closeClient
	closeClient = func(c pulsar.Client) { watch(c); old(c) }
	return func() { closeClient = old }
}
