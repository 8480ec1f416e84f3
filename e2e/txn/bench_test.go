//go:build e2e

package txn

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/admin"
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
// one-message and 100-messages report p50 and p99 latencies in
// microseconds and their ratios (target: txn/plain <= 3). one-message also
// measures a Producer with TxnPrebegin(0) (txn-nopool) and plain
// pulsar-client-go on one partition: a sync send (raw), a transaction begun,
// written and committed (raw-txn), and one begun before the timing starts
// (raw-prebegun). bulk warms both up, then alternates, over 5 rounds,
// plain sync sends, plain SendAsync of 200,000 messages and SendTxnBulk of
// the same messages in transactions of 1,000, and reports the medians:
// throughput, ratios and the client's and the broker's CPU per message,
// and messages per broker entry (a batch is one entry; the bulk's count
// includes the commit markers) (target: bulk/async >= 1). It also reports
// the evidence on that target: what a transaction costs the broker beyond
// the plain writes of its messages, the coordinator's log appends per
// transaction, and the bulk/async ratio that the CPU of both sides allows
// on these shared cores. Rounds of 50,000 messages (before 2026-11-26)
// lasted 0.1-0.3 s, where the broker's CPU, read in 10 ms ticks, moved in
// steps of 200 ns a message and its JIT was still compiling the bulk's
// paths.
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
	// p0 begins each transaction at its commit, as before TxnPrebegin.
	p0, err := newProducer(ctx, bed, topic, producer.TxnPrebegin(0))
	if err != nil {
		b.Fatal(err)
	}
	defer p0.Close(context.Background())

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
	txnOn := func(p *producer.Producer, start, n int) {
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
	txn := func(start, n int) { txnOn(p, start, n) }

	// Warm the broker's JIT up with both kinds of traffic.
	warm := time.Now().Add(20 * time.Second)
	for i := 0; time.Now().Before(warm); i++ {
		plain(i)
		txn(i, 10)
		txnOn(p0, i, 10)
	}

	// The same one-message transaction with plain pulsar-client-go, on one
	// partition: begun inside the timing (raw-txn) and before it
	// (raw-prebegun: the floor of what TxnPrebegin can reach).
	client, err := bedsuite.Client(bed.Clusters()[0].ServiceURL, true)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	raw, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic + "-partition-0", DisableBatching: true})
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	rawSend := func(tx pulsar.Transaction) {
		if _, err := raw.Send(ctx, &pulsar.ProducerMessage{Key: keys[0], Payload: payload, Transaction: tx}); err != nil {
			b.Fatal(err)
		}
	}
	rawBegin := func() pulsar.Transaction {
		tx, err := client.NewTransaction(time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		return tx
	}
	rawCommit := func(tx pulsar.Transaction) {
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("one-message", func(b *testing.B) {
		for range b.N {
			const n = 2000
			var tp, tt, t0s, rp, rt, rpre []time.Duration
			for i := range n {
				t0 := time.Now()
				plain(i)
				t1 := time.Now()
				txn(i, 1)
				t2 := time.Now()
				txnOn(p0, i, 1)
				t3 := time.Now()
				rawSend(nil)
				t4 := time.Now()
				tx := rawBegin()
				rawSend(tx)
				rawCommit(tx)
				t5 := time.Now()
				tx = rawBegin()
				t6 := time.Now()
				rawSend(tx)
				rawCommit(tx)
				t7 := time.Now()
				tp = append(tp, t1.Sub(t0))
				tt = append(tt, t2.Sub(t1))
				t0s = append(t0s, t3.Sub(t2))
				rp = append(rp, t4.Sub(t3))
				rt = append(rt, t5.Sub(t4))
				rpre = append(rpre, t7.Sub(t6))
			}
			reportRatio(b, "plain", tp, "txn", tt)
			reportRatio(b, "plain", tp, "txn-nopool", t0s)
			reportRatio(b, "raw", rp, "raw-txn", rt)
			reportRatio(b, "raw", rp, "raw-prebegun", rpre)
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
			const plainN, bulkN, perTxn, rounds = 5000, 200000, 1000, 5
			msgs := make([]*producer.Message, bulkN)
			for i := range msgs {
				msgs[i] = msg(i)
			}
			async := func() {
				var failed atomic.Int64
				for _, m := range msgs {
					p.SendAsync(ctx, m, func(_ producer.ID, _ *producer.Message, err error) {
						if err != nil {
							failed.Add(1)
						}
					})
				}
				if err := p.Flush(ctx); err != nil || failed.Load() != 0 {
					b.Fatalf("async: %d failed, %v", failed.Load(), err)
				}
			}
			pid, adminURL := bed.Clusters()[0].PID(), bed.Clusters()[0].AdminURL
			entries := func() float64 {
				n, err := admin.EntriesAdded(ctx, adminURL, topic)
				if err != nil {
					b.Fatal(err)
				}
				return float64(n)
			}
			tcAppends := func() float64 {
				m, err := txnMetrics(ctx, adminURL)
				if err != nil {
					b.Fatal(err)
				}
				return m["pulsar_txn_append_log_total"]
			}
			// The broker compiles its paths for bulk transactions at
			// their first rounds: warm them up untimed.
			async()
			if _, err := p.SendTxnBulk(ctx, msgs, perTxn); err != nil {
				b.Fatal(err)
			}
			var rp, ra, rb, ca, cb, ja, jb, ea, eb, lb []float64
			for range rounds {
				t0 := time.Now()
				for i := range plainN {
					plain(i)
				}
				rp = append(rp, plainN/time.Since(t0).Seconds())
				e0 := entries()
				c0, j0, t0 := cpuTime(), jvmCPU(pid), time.Now()
				async()
				ra = append(ra, bulkN/time.Since(t0).Seconds())
				ca = append(ca, float64((cpuTime()-c0).Nanoseconds())/bulkN)
				ja = append(ja, float64((jvmCPU(pid)-j0).Nanoseconds())/bulkN)
				e1 := entries()
				ea = append(ea, bulkN/(e1-e0))
				l0 := tcAppends()
				c0, j0, t0 = cpuTime(), jvmCPU(pid), time.Now()
				res, err := p.SendTxnBulk(ctx, msgs, perTxn)
				if err != nil || res.Committed != bulkN {
					b.Fatalf("bulk: %+v, %v", res, err)
				}
				rb = append(rb, bulkN/time.Since(t0).Seconds())
				cb = append(cb, float64((cpuTime()-c0).Nanoseconds())/bulkN)
				jb = append(jb, float64((jvmCPU(pid)-j0).Nanoseconds())/bulkN)
				lb = append(lb, (tcAppends()-l0)/float64(res.Txns))
				eb = append(eb, bulkN/(entries()-e1))
			}
			b.ReportMetric(median(rp), "sync-msg/s")
			b.ReportMetric(median(ra), "async-msg/s")
			b.ReportMetric(median(rb), "bulk-msg/s")
			b.ReportMetric(median(rb)/median(ra), "bulk/async")
			b.ReportMetric(median(rb)/median(rp), "bulk/sync")
			b.ReportMetric(median(ca), "async-cpu-ns/msg")
			b.ReportMetric(median(cb), "bulk-cpu-ns/msg")
			b.ReportMetric(median(ja), "async-broker-cpu-ns/msg")
			b.ReportMetric(median(jb), "bulk-broker-cpu-ns/msg")
			b.ReportMetric(median(ea), "async-msgs/entry")
			b.ReportMetric(median(eb), "bulk-msgs/entry")
			// What a transaction costs the broker beyond its messages'
			// plain writes, and the coordinator's log appends it takes.
			b.ReportMetric((median(jb)-median(ja))*perTxn/1000, "bulk-broker-extra-us/txn")
			b.ReportMetric(median(lb), "bulk-tc-appends/txn")
			// With client and broker on the same two cores, both busy,
			// throughput goes as the inverse of their CPU per message
			// together: the bulk/async ratio that CPU allows.
			b.ReportMetric((median(ca)+median(ja))/(median(cb)+median(jb)), "cpu-bound-bulk/async")
		}
	})
}

// median returns the median of xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// jvmCPU returns the CPU time so far of process pid (the broker's JVM), in
// the kernel's clock ticks (10 ms), from /proc; 0 when it cannot be read.
func jvmCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the line.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// cpuTime returns the process's CPU time so far (user and system): the
// client's side only, as the brokers are other processes.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
