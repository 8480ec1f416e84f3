//go:build e2e

package txn

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
)

// BenchmarkTxn compares transactions with plain synchronous sends on ONE
// local cluster (G1, 512 MiB heap; the test bed sets
// journalFlushWhenQueueEmpty=true, transactionCoordinatorEnabled=true and
// segmented transaction-buffer snapshots), alternating the two within one
// run so that both see the same broker state. Each sub-benchmark does a
// fixed amount of work per iteration; run it once:
//
//	go test -tags e2e -run '^$' -bench Txn -benchtime 1x -timeout 30m ./e2e/txn/
//
// Metrics: p50 latencies in microseconds and their ratio (targets: txn/plain
// <= 3 for one message and for 100 messages), and bulk transactional
// throughput over plain sync-acknowledged sends of the same messages
// (target >= 5).
func BenchmarkTxn(b *testing.B) {
	ctx := context.Background()
	var log io.Writer = io.Discard
	if testing.Verbose() {
		log = os.Stderr
	}
	bed, err := testbed.Start(ctx, testbed.Options{Clusters: 1, Log: log,
		JVMArgs: []string{"-XX:+UseG1GC", "-Xms512m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m"}})
	if err != nil {
		b.Fatalf("the test bed must start: %v", err)
	}
	defer bed.Stop()
	topic := uniqueTopic("bench")
	if err := createTopic(ctx, bed, topic); err != nil {
		b.Fatal(err)
	}
	p, err := newProducer(ctx, bed, topic)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(context.Background())

	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench-%d", i)
	}
	payload := make([]byte, 128)
	msg := func(i int) *producer.Message { return &producer.Message{Key: keys[i%len(keys)], Value: payload} }
	plain := func(i int) {
		if _, err := p.Send(ctx, msg(i)); err != nil {
			b.Fatal(err)
		}
	}
	txn := func(start, n int) {
		err := p.RunInTxn(ctx, func(_ context.Context, tx *producer.Txn) error {
			for j := range n {
				if err := tx.Send(msg(start + j)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}

	// Warm the broker's JIT up with both kinds of traffic.
	warm := time.Now().Add(20 * time.Second)
	for i := 0; time.Now().Before(warm); i++ {
		plain(i)
		txn(i, 10)
	}

	b.Run("one-message", func(b *testing.B) {
		for range b.N {
			const n = 2000
			var tp, tt []time.Duration
			for i := range n {
				t0 := time.Now()
				plain(i)
				t1 := time.Now()
				txn(i, 1)
				tp = append(tp, t1.Sub(t0))
				tt = append(tt, time.Since(t1))
			}
			reportRatio(b, "plain", tp, "txn", tt)
		}
	})
	b.Run("100-messages", func(b *testing.B) {
		for range b.N {
			const n = 100
			var tp, tt []time.Duration
			for i := range n {
				t0 := time.Now()
				for j := range 100 {
					plain(i*100 + j)
				}
				t1 := time.Now()
				txn(i*100, 100)
				tp = append(tp, t1.Sub(t0))
				tt = append(tt, time.Since(t1))
			}
			reportRatio(b, "plain100", tp, "txn100", tt)
		}
	})
	b.Run("bulk", func(b *testing.B) {
		for range b.N {
			const plainN, bulkN, perTxn = 5000, 50000, 1000
			msgs := make([]*producer.Message, bulkN)
			for i := range msgs {
				msgs[i] = msg(i)
			}
			var rp, rb []float64
			for range 3 {
				t0 := time.Now()
				for i := range plainN {
					plain(i)
				}
				rp = append(rp, plainN/time.Since(t0).Seconds())
				t0 = time.Now()
				res, err := p.SendTxnBulk(ctx, msgs, perTxn)
				if err != nil || res.Committed != bulkN {
					b.Fatalf("bulk: %+v, %v", res, err)
				}
				rb = append(rb, bulkN/time.Since(t0).Seconds())
			}
			slices.Sort(rp)
			slices.Sort(rb)
			b.ReportMetric(rp[1], "plain-msg/s")
			b.ReportMetric(rb[1], "bulk-msg/s")
			b.ReportMetric(rb[1]/rp[1], "bulk/plain")
		}
	})
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)*99/100]
}

func reportRatio(b *testing.B, an string, a []time.Duration, bn string, bs []time.Duration) {
	pa, pb := p50(a), p50(bs)
	b.ReportMetric(float64(pa.Microseconds()), an+"-p50-us")
	b.ReportMetric(float64(pb.Microseconds()), bn+"-p50-us")
	b.ReportMetric(float64(p99(a).Microseconds()), an+"-p99-us")
	b.ReportMetric(float64(p99(bs).Microseconds()), bn+"-p99-us")
	b.ReportMetric(float64(pb)/float64(pa), bn+"/"+an)
}
