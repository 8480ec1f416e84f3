package producer_test

import (
	"context"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/producer"
)

// sendAsyncAllocs pins the allocations of one SendAsync, from hand-over to
// callback, over a fake that acks at once, the fake's own included (it
// allocates each message's ID): a regression fails here, not in a
// benchmark nobody reads. Today that is 1, the fake's ID: the inflight that
// carries the message to its callback is reused. The raw path, the same
// message handed straight to a writer of the same fake, allocates 2 (its
// ProducerMessage and the ID), and the SDK must stay below it.
const sendAsyncAllocs = 1

func TestSendAsyncAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own; make unit runs this test without it")
	}
	for _, tc := range []struct {
		clusters int
		observed bool
	}{{1, false}, {5, false}, {1, true}} {
		clusters := tc.clusters
		fake := newFake(2)
		var opts []producer.Opt
		if tc.observed {
			// The Event comes with the reused inflight.
			opts = append(opts, producer.Observe(nopObserver{}))
		}
		p := newProducer(t, fake, clusters, opts...)
		msg := &producer.Message{Key: "user-42", Value: []byte("payload")}
		done := make(chan struct{}, 1)
		cb := func(producer.ID, *producer.Message, error) { done <- struct{}{} }
		ctx := context.Background()
		got := testing.AllocsPerRun(2000, func() {
			p.SendAsync(ctx, msg, cb)
			<-done
		})
		w := rawWriter(t, fake)
		rawCb := func(pulsar.MessageID, *pulsar.ProducerMessage, error) { done <- struct{}{} }
		raw := testing.AllocsPerRun(2000, func() {
			w.SendAsync(ctx, &pulsar.ProducerMessage{Key: msg.Key, Payload: msg.Value}, rawCb)
			<-done
		})
		if got > sendAsyncAllocs || got >= raw {
			t.Errorf("%d clusters (observed %v): SendAsync allocates %.0f times per message, want at most %d and fewer than the raw path's %.0f",
				clusters, tc.observed, got, sendAsyncAllocs, raw)
		}
		t.Logf("%d clusters (observed %v): %.0f allocations per message (raw path %.0f)", clusters, tc.observed, got, raw)
	}
}
