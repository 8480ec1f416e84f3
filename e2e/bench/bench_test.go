//go:build e2e

package bench

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
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
)

const (
	partitions   = 5
	keyCount     = 10_000
	payloadSize  = 128
	maxPending   = 10_000 // per partition, as in the raw baseline
	warmupPeriod = 20 * time.Second
)

// rounds is how many times every side runs.
var rounds = flag.Int("rounds", 4, "rounds of raw and SDK; each round runs every side once")

var (
	bed     *testbed.Bed
	keys    []string
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
	bed, err = testbed.Start(ctx, testbed.Options{Clusters: 1, JVMArgs: []string{"-XX:+UseG1GC", "-Xms512m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m"}})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: test bed:", err)
		os.Exit(1)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range keyCount {
		keys = append(keys, fmt.Sprintf("key-%08d", i))
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
	c := bed.Clusters()[0]
	if err := admin.CreatePartitionedTopic(context.Background(), c.AdminURL, topic, partitions); err != nil {
		b.Fatal(err)
	}
	return topic
}

// sender is what both sides offer the benchmark loop.
type sender interface {
	sendAsync(i int, done func(error))
	send(i int) error
	flush() error
	close()
}

type rawSender struct {
	client pulsar.Client
	p      pulsar.Producer
}

func newRaw(b *testing.B, topic string, batching bool) *rawSender {
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: bed.Clusters()[0].ServiceURL, Logger: plog.DefaultNopLogger()})
	if err != nil {
		b.Fatal(err)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{
		Topic: topic, CompressionType: pulsar.LZ4, MaxPendingMessages: maxPending,
		DisableBatching: !batching, BatchingMaxMessages: 1000, BatchingMaxPublishDelay: 10 * time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	return &rawSender{client: client, p: p}
}

func (r *rawSender) sendAsync(i int, done func(error)) {
	r.p.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: keys[i%keyCount], Payload: values[i%len(values)]},
		func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done(err) })
}

func (r *rawSender) send(i int) error {
	_, err := r.p.Send(context.Background(), &pulsar.ProducerMessage{Key: keys[i%keyCount], Payload: values[i%len(values)]})
	return err
}

func (r *rawSender) flush() error { return r.p.FlushWithCtx(context.Background()) }
func (r *rawSender) close()       { r.p.Close(); r.client.Close() }

type sdkSender struct{ p *producer.Producer }

func newSDK(b *testing.B, topic string, batching bool) *sdkSender {
	p, err := producer.New(context.Background(), bed.Topology(), producer.Topic(topic),
		producer.Batching(batching), producer.Compression(producer.LZ4),
		producer.MaxPendingMessages(maxPending*partitions), producer.MemoryLimit(64<<20))
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
		for i, end := 0, time.Now().Add(warmupPeriod); time.Now().Before(end); i++ {
			wg.Add(1)
			s.sendAsync(i, func(error) { wg.Done() })
		}
		wg.Wait()
	})
}

// BenchmarkAsync: batched LZ4 throughput, raw vs SDK, -rounds rounds each,
// in rotating order (see inRound). Use -benchtime Nx (e.g. 300000x) for
// comparable rounds.
func BenchmarkAsync(b *testing.B) {
	warm(b)
	for round := 1; round <= *rounds; round++ {
		for _, side := range inRound(round) {
			b.Run(fmt.Sprintf("%s/round=%d", side.name, round), func(b *testing.B) {
				s := side.open(b, newTopic(b), true)
				defer s.close()
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
				cpu0 := cpuTime()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s.sendAsync(i, done)
				}
				if err := s.flush(); err != nil {
					b.Fatal(err)
				}
				wg.Wait()
				b.StopTimer()
				cpu := cpuTime() - cpu0
				failed.Range(func(k, _ any) bool { b.Fatal(k); return false })
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/msg")
			})
		}
	}
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
