//go:build e2e

package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/router"
)

const (
	partitions  = 5
	keyCount    = 10_000
	payloadSize = 128
)

// maxPending is the messages a partition may hold unacknowledged, on both
// sides (the raw producer's MaxPendingMessages; the SDK's cluster share is
// maxPending per partition).
var maxPending = flag.Int("max-pending", 10_000, "messages in flight per partition, both sides")

// rounds is how many times every side runs.
var rounds = flag.Int("rounds", 4, "rounds of raw and SDK; each round runs every side once")

// clusters is how many clusters the producer benchmarks use. With more
// than one, the raw side is one plain pulsar-client-go client and producer
// per cluster, each key sent to the cluster keyroute would route it to
// (looked up in a table made before the run, so the raw side pays nothing
// for routing).
var clusters = flag.Int("clusters", 1, "clusters for BenchmarkAsync and BenchmarkSync")

// warmFor is how long the brokers are loaded before the first figure; 0
// for a CPU profile of one side alone (-bench 'Async/sdk$').
var warmFor = flag.Duration("warm", 20*time.Second, "load on the brokers before BenchmarkAsync and BenchmarkSync")

var (
	bed     *testbed.Bed
	keys    []string
	keyHome []int    // by key index: the cluster keyroute routes it to
	values  [][]byte // distinct random payloads: LZ4 must not flatter either side
	topicNo int
)

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		// Only benchmarks here: `go test ./e2e/...` without -bench starts
		// no cluster.
		os.Exit(m.Run())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	var err error
	// The raw baseline in shared/PULSAR.md used G1 with a 512m heap.
	bed, err = testbed.Start(ctx, testbed.Options{Clusters: *clusters, JVMArgs: []string{"-XX:+UseG1GC", "-Xms512m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m"}})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: test bed:", err)
		os.Exit(1)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var members []router.Member
	for _, cl := range bed.Topology().Clusters {
		members = append(members, router.Member{Name: cl.Name, Weight: cl.Weight})
	}
	rt, err := router.New(members)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: router:", err)
		os.Exit(1)
	}
	for i := range keyCount {
		keys = append(keys, fmt.Sprintf("key-%08d", i))
		keyHome = append(keyHome, rt.Cluster(router.Hash(keys[i])))
	}
	for range 1024 {
		v := make([]byte, payloadSize)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		values = append(values, v)
	}
	code := m.Run()
	_ = bed.Stop()
	os.Exit(code)
}

func newTopic(b *testing.B) string {
	b.Helper()
	topicNo++
	topic := fmt.Sprintf("persistent://public/default/bench-%d-%d", time.Now().UnixNano(), topicNo)
	for _, c := range bed.Clusters() {
		if err := admin.CreatePartitionedTopic(context.Background(), c.AdminURL, topic, partitions); err != nil {
			b.Fatal(err)
		}
	}
	return topic
}

// entriesAdded is how many entries the brokers added to topic's ledgers,
// over every cluster.
func entriesAdded(b *testing.B, topic string) int64 {
	b.Helper()
	var sum int64
	for _, c := range bed.Clusters() {
		n, err := admin.EntriesAdded(context.Background(), c.AdminURL, topic)
		if err != nil {
			b.Fatal(err)
		}
		sum += n
	}
	return sum
}

// sender is what both sides offer the benchmark loop.
type sender interface {
	sendAsync(i int, done func(error))
	send(i int) error
	flush() error
	close()
}

// rawSender is plain pulsar-client-go: a client and a producer per
// cluster, with its defaults but for the settings both sides share.
type rawSender struct {
	clients []pulsar.Client
	ps      []pulsar.Producer
}

func newRaw(b *testing.B, topic string, batching bool) *rawSender {
	r := &rawSender{}
	for _, c := range bed.Clusters() {
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, Logger: plog.DefaultNopLogger()})
		if err != nil {
			b.Fatal(err)
		}
		p, err := client.CreateProducer(pulsar.ProducerOptions{
			Topic: topic, CompressionType: pulsar.LZ4, MaxPendingMessages: *maxPending,
			DisableBatching: !batching, BatchingMaxMessages: 1000, BatchingMaxPublishDelay: 10 * time.Millisecond,
		})
		if err != nil {
			b.Fatal(err)
		}
		r.clients, r.ps = append(r.clients, client), append(r.ps, p)
	}
	return r
}

func (r *rawSender) sendAsync(i int, done func(error)) {
	k := i % keyCount
	r.ps[keyHome[k]].SendAsync(context.Background(), &pulsar.ProducerMessage{Key: keys[k], Payload: values[i%len(values)]},
		func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done(err) })
}

func (r *rawSender) send(i int) error {
	k := i % keyCount
	_, err := r.ps[keyHome[k]].Send(context.Background(), &pulsar.ProducerMessage{Key: keys[k], Payload: values[i%len(values)]})
	return err
}

func (r *rawSender) flush() error {
	var errs []error
	for _, p := range r.ps {
		errs = append(errs, p.FlushWithCtx(context.Background()))
	}
	return errors.Join(errs...)
}

func (r *rawSender) close() {
	for i, p := range r.ps {
		p.Close()
		r.clients[i].Close()
	}
}

type sdkSender struct{ p *producer.Producer }

func newSDK(b *testing.B, topic string, batching bool) *sdkSender {
	// The raw side's limits, on every cluster: 10,000 messages per
	// partition and pulsar-client-go's default 64 MiB per client.
	n := len(bed.Clusters())
	p, err := producer.New(context.Background(), bed.Topology(), producer.Topic(topic),
		producer.Batching(batching), producer.Compression(producer.LZ4),
		producer.MaxPendingMessages(*maxPending*partitions*n), producer.MemoryLimit(int64(n)*64<<20))
	if err != nil {
		b.Fatal(err)
	}
	return &sdkSender{p: p}
}

func (s *sdkSender) sendAsync(i int, done func(error)) {
	s.p.SendAsync(context.Background(), &producer.Message{Key: keys[i%keyCount], Value: values[i%len(values)]},
		func(_ producer.ID, _ *producer.Message, err error) { done(err) })
}

func (s *sdkSender) send(i int) error {
	_, err := s.p.Send(context.Background(), &producer.Message{Key: keys[i%keyCount], Value: values[i%len(values)]})
	return err
}

func (s *sdkSender) flush() error { return s.p.Flush(context.Background()) }
func (s *sdkSender) close()       { _ = s.p.Close(context.Background()) }

// sideSpec is one way of sending: raw pulsar-client-go or the SDK.
type sideSpec struct {
	name string
	open func(*testing.B, string, bool) sender
}

var sides = []sideSpec{
	{"raw", func(b *testing.B, t string, batching bool) sender { return newRaw(b, t, batching) }},
	{"sdk", func(b *testing.B, t string, batching bool) sender { return newSDK(b, t, batching) }},
	// The SDK without callbacks: outcomes are not reported, so there is no
	// hop to the callback goroutine; Flush waits for the acks. This shows
	// what the hop costs.
	{"sdk-nocb", func(b *testing.B, t string, batching bool) sender { return &sdkNoCallback{newSDK(b, t, batching)} }},
}

type sdkNoCallback struct{ *sdkSender }

func (s *sdkNoCallback) sendAsync(i int, done func(error)) {
	s.p.SendAsync(context.Background(), &producer.Message{Key: keys[i%keyCount], Value: values[i%len(values)]}, nil)
	done(nil)
}

// inRound returns the sides in the order round runs them: each round
// starts one side later, so that no side always runs right after the same
// other one.
func inRound(round int) []sideSpec {
	out := make([]sideSpec, len(sides))
	for i := range sides {
		out[i] = sides[(i+round-1)%len(sides)]
	}
	return out
}

// liveMB is the heap the last GC cycle found live, in MB.
func liveMB() float64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64()) / 1e6
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var warmOnce sync.Once

// warm puts ~20 s of load on the broker so its JIT settles before any figure.
func warm(b *testing.B) {
	warmOnce.Do(func() {
		s := newRaw(b, newTopic(b), true)
		defer s.close()
		var wg sync.WaitGroup
		for i, end := 0, time.Now().Add(*warmFor); time.Now().Before(end); i++ {
			wg.Add(1)
			s.sendAsync(i, func(error) { wg.Done() })
		}
		wg.Wait()
	})
}

// BenchmarkAsync: batched LZ4 throughput and process CPU per message, raw
// vs SDK on -clusters clusters, -rounds rounds each, in rotating order (see
// inRound); the last sub-benchmark reports the medians and their ratios.
// Use -benchtime Nx (e.g. 300000x) for comparable rounds.
//
// Each side is opened once, on a topic of its own, and sends in every
// round, as a service's producer is made once and then sends for long;
// each round starts after a GC. Opening a side for each round and closing
// it after left every closed producer in the heap for up to its
// SendTimeout (30 s): pulsar-client-go v0.21.0's failTimeoutMessages
// goroutine, which holds its partition producer, ends only at its timer's
// next tick. A closed producer kept 7 MB (raw) or 12 MB (SDK) of heap on
// one cluster, and the live heap went from 74 to 308 MB in a run of three
// rounds (PERF.md, 2026-11-26 night). The sides that wait meanwhile cost
// about 33 ms of CPU a second (all three open and idle), in every round
// alike. Each round reports the live heap (live-MB) that the last GC
// found.
func BenchmarkAsync(b *testing.B) {
	warm(b)
	type opened struct {
		topic string
		s     sender
	}
	open := map[string]opened{}
	for _, side := range sides {
		// The side's goroutines, pulsar-client-go's and the SDK's,
		// inherit the label from the goroutine that opens it, and the
		// sending goroutine takes it in each round: -cpuprofile splits
		// by side (pprof -tagfocus 'side=^sdk$').
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("side", side.name)))
		topic := newTopic(b)
		open[side.name] = opened{topic, side.open(b, topic, true)}
		pprof.SetGoroutineLabels(context.Background())
	}
	defer func() {
		for _, o := range open {
			o.s.close()
		}
	}()
	cpuPerMsg, rate, perEntry := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	for round := 1; round <= *rounds; round++ {
		for _, side := range inRound(round) {
			var cpuLast, rateLast, perEntryLast float64 // of the run with the final b.N
			b.Run(fmt.Sprintf("%s/round=%d", side.name, round), func(b *testing.B) {
				pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("side", side.name)))
				defer pprof.SetGoroutineLabels(context.Background())
				o := open[side.name]
				entries0 := entriesAdded(b, o.topic)
				var failed sync.Map
				var wg sync.WaitGroup
				wg.Add(b.N)
				done := func(err error) {
					if err != nil {
						failed.Store(err.Error(), true)
					}
					wg.Done()
				}
				b.ReportAllocs()
				runtime.GC()
				cpu0 := cpuTime()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					o.s.sendAsync(i, done)
				}
				if err := o.s.flush(); err != nil {
					b.Fatal(err)
				}
				wg.Wait()
				b.StopTimer()
				cpu := cpuTime() - cpu0
				failed.Range(func(k, _ any) bool { b.Fatal(k); return false })
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/msg")
				cpuLast, rateLast = float64(cpu.Nanoseconds())/float64(b.N), float64(b.N)/b.Elapsed().Seconds()
				// Messages per broker entry: the mean batch the broker
				// stored, so that a difference in batching between the
				// sides shows.
				if n := entriesAdded(b, o.topic) - entries0; n > 0 {
					perEntryLast = float64(b.N) / float64(n)
				}
				b.ReportMetric(perEntryLast, "msg/entry")
				b.ReportMetric(liveMB(), "live-MB")
			})
			cpuPerMsg[side.name] = append(cpuPerMsg[side.name], cpuLast)
			rate[side.name] = append(rate[side.name], rateLast)
			perEntry[side.name] = append(perEntry[side.name], perEntryLast)
		}
	}
	b.Run("median", func(b *testing.B) {
		raw := median(cpuPerMsg["raw"])
		b.ReportMetric(raw, "raw-cpu-ns/msg")
		b.ReportMetric(median(perEntry["raw"]), "raw-msg/entry")
		for _, side := range sides[1:] {
			b.ReportMetric(median(perEntry[side.name]), side.name+"-msg/entry")
			b.ReportMetric(median(cpuPerMsg[side.name])/raw, side.name+"/raw-cpu")
			b.ReportMetric(median(rate[side.name])/median(rate["raw"]), side.name+"/raw-msg/s")
		}
	})
}

// BenchmarkSync: one message at a time, batching off, raw vs SDK: p50/p99.
func BenchmarkSync(b *testing.B) {
	warm(b)
	for round := 1; round <= *rounds; round++ {
		for _, side := range inRound(round) {
			b.Run(fmt.Sprintf("%s/round=%d", side.name, round), func(b *testing.B) {
				s := side.open(b, newTopic(b), false)
				defer s.close()
				lat := make([]time.Duration, b.N)
				b.ReportAllocs()
				cpu0 := cpuTime()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if err := s.send(i); err != nil {
						b.Fatal(err)
					}
					lat[i] = time.Since(t0)
				}
				b.StopTimer()
				cpu := cpuTime() - cpu0
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/msg")
			})
		}
	}
}
