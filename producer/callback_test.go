package producer_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

// probeObserver asks, from another goroutine, whether that goroutine is in
// a callback while the callback goroutine reports each message (OnDone
// runs there, just before the message's callback).
type probeObserver struct {
	p       atomic.Pointer[producer.Producer]
	claimed atomic.Int64 // probes that answered true
}

func (*probeObserver) OnStart(context.Context, *producer.Event) map[string]string { return nil }

func (o *probeObserver) OnDone(*producer.Event) {
	p := o.p.Load()
	if p == nil {
		return
	}
	in := make(chan bool)
	go func() { in <- p.InCallback() }()
	if <-in {
		o.claimed.Add(1)
	}
}

// TestInCallbackGuardReadsGoroutineIDsOnlyForUserCallbacks pins where the
// in-callback guard pays for a goroutine's id: never while Send's outcomes
// or callback-less messages are reported, only while a SendAsync caller's
// callback may be running. Other goroutines' probes are answered false
// either way.
func TestInCallbackGuardReadsGoroutineIDsOnlyForUserCallbacks(t *testing.T) {
	var reads atomic.Int64
	producer.CountGoidReads(&reads)
	obs := &probeObserver{}
	fake := newFake(2)
	p := newProducer(t, fake, 1, producer.Observe(obs))
	obs.p.Store(p)
	ctx := context.Background()
	reads.Store(0) // the callback goroutines read their own at start

	for i := range 20 {
		_, err := p.Send(ctx, &producer.Message{Key: string(rune('a' + i))})
		require.NoError(t, err)
	}
	p.SendAsync(ctx, &producer.Message{Key: "k"}, nil)
	require.NoError(t, p.Flush(ctx))
	assert.Zero(t, reads.Load(), "goroutine ids read while only Send's outcomes and callback-less messages were reported")

	done := make(chan struct{})
	p.SendAsync(ctx, &producer.Message{Key: "k"}, func(producer.ID, *producer.Message, error) { close(done) })
	<-done
	assert.NotZero(t, reads.Load(), "no goroutine id read while a SendAsync callback was due")
	assert.Zero(t, obs.claimed.Load(), "a probe from another goroutine was taken for a callback")
}
