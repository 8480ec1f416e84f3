package producer_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

// TestReportedNotRetained: once a message has been reported, the Producer
// holds no reference to it, although its partition sends nothing more
// (before, a partition's track kept its reported messages, values
// included, until its next send).
func TestReportedNotRetained(t *testing.T) {
	t.Run("observed", testObservedNotRetained)
	for _, tc := range []struct {
		name string
		send func(p *producer.Producer, m *producer.Message) error
	}{
		{"callback", func(p *producer.Producer, m *producer.Message) error {
			p.SendAsync(context.Background(), m, func(producer.ID, *producer.Message, error) {})
			return nil
		}},
		{"no callback", func(p *producer.Producer, m *producer.Message) error {
			p.SendAsync(context.Background(), m, nil)
			return nil
		}},
		{"send", func(p *producer.Producer, m *producer.Message) error {
			_, err := p.Send(context.Background(), m)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := producertest.New(producertest.Partitions(2), producertest.KeepMessages(false))
			p := newProducer(t, fake, 1)
			const n = 100
			var collected atomic.Int64
			for i := range n {
				m := &producer.Message{Key: string(rune('a' + i%26)), Value: make([]byte, 1024)}
				runtime.SetFinalizer(m, func(*producer.Message) { collected.Add(1) })
				require.NoError(t, tc.send(p, m))
			}
			require.NoError(t, p.Flush(context.Background()))
			// Finalizers run on their own goroutine after a GC: collect
			// until they have all run, or give up after many rounds.
			for i := 0; i < 100 && collected.Load() < n; i++ {
				runtime.GC()
				runtime.Gosched()
			}
			require.EqualValues(t, n, collected.Load(), "messages still referenced after their outcome")
		})
	}
}

// tokenObserver gives each message a Token that counts its collection.
type tokenObserver struct{ collected *atomic.Int64 }

func (o tokenObserver) OnStart(_ context.Context, ev *producer.Event) map[string]string {
	tok := &[64]byte{}
	runtime.SetFinalizer(tok, func(*[64]byte) { o.collected.Add(1) })
	ev.Token = tok
	return nil
}

func (tokenObserver) OnDone(*producer.Event) {}

// An observed message's Event, reused for the partition's later messages,
// keeps nothing an observer set once the message has been reported.
func testObservedNotRetained(t *testing.T) {
	fake := producertest.New(producertest.Partitions(2), producertest.KeepMessages(false))
	var collected atomic.Int64
	p := newProducer(t, fake, 1, producer.Observe(tokenObserver{&collected}))
	const n = 100
	for i := range n {
		p.SendAsync(context.Background(), &producer.Message{Key: string(rune('a' + i%26))}, func(producer.ID, *producer.Message, error) {})
	}
	require.NoError(t, p.Flush(context.Background()))
	for i := 0; i < 100 && collected.Load() < n; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	require.EqualValues(t, n, collected.Load(), "Tokens still referenced after their message's outcome")
}
