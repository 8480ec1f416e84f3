package consumer_test

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/consumer"
)

// BenchmarkMerge measures the Consumer's own cost per message: messages
// already in the fake streams of n clusters, taken with Receive and acked,
// against the same messages read straight from one channel per cluster.
func BenchmarkMerge(b *testing.B) {
	for _, n := range []int{1, 5} {
		b.Run(clusters(n), func(b *testing.B) {
			bed := newFakeBed(1024)
			c, err := consumer.New(context.Background(), topo(n), consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(context.Background())
			feed(b, bed, n, b.N)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				m, err := c.Receive(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Ack(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(clusters(n)+"/raw", func(b *testing.B) {
			bed := newFakeBed(1024)
			streams := make([]*fakeStream, n)
			for i := range streams {
				streams[i] = newFakeStream("c", 1024)
				bed.streams[topo(n).Clusters[i].Name] = streams[i]
			}
			feed(b, bed, n, b.N)
			out := make(chan pulsar.ConsumerMessage)
			var wg sync.WaitGroup
			for _, s := range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for cm := range s.ch {
						out <- cm
					}
				}()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				cm := <-out
				_ = streams[0].AckID(cm.Message.ID())
			}
			b.StopTimer()
			for _, s := range streams {
				close(s.ch)
			}
			wg.Wait()
		})
	}
}

func clusters(n int) string {
	if n == 1 {
		return "1cluster"
	}
	return "5clusters"
}

// feed pushes total messages spread over the n clusters' streams, from
// one goroutine per cluster, before and while the benchmark runs.
func feed(b *testing.B, bed *fakeBed, n, total int) {
	b.Helper()
	t := topo(n)
	for i, cl := range t.Clusters {
		s := bed.stream(cl.Name)
		share := total / n
		if i < total%n {
			share++
		}
		go func() {
			for j := range share {
				s.ch <- s.msg(int32(j%4), "k")
			}
		}()
	}
}

// BenchmarkReceiveInto measures ReceiveInto into a buffer of 64 with an
// Ack per message, over n clusters whose streams are fed as they are read.
func BenchmarkReceiveInto(b *testing.B) {
	for _, n := range []int{1, 5} {
		b.Run(clusters(n), func(b *testing.B) {
			bed := newFakeBed(1024)
			c, err := consumer.New(context.Background(), topo(n), consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(context.Background())
			for _, cl := range topo(n).Clusters {
				bed.stream(cl.Name).quiet = true
			}
			feed(b, bed, n, b.N)
			ctx := context.Background()
			buf := make([]consumer.Message, 64)
			b.ReportAllocs()
			b.ResetTimer()
			for got := 0; got < b.N; {
				k, err := c.ReceiveInto(ctx, buf[:min(len(buf), b.N-got)])
				if err != nil {
					b.Fatal(err)
				}
				for i := range buf[:k] {
					if err := c.Ack(ctx, &buf[i]); err != nil {
						b.Fatal(err)
					}
				}
				got += k
			}
		})
	}
}
