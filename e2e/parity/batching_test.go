//go:build e2e

package parity

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// text returns about n bytes of words drawn from a small vocabulary: it
// compresses, and a codec that works harder finds more to gain.
func text(n int) []byte {
	r := rand.New(rand.NewPCG(7, 7))
	vocab := make([]string, 400)
	for i := range vocab {
		w := make([]byte, 3+r.IntN(8))
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		vocab[i] = string(w)
	}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(vocab[r.IntN(len(vocab))])
		b.WriteByte(' ')
	}
	return []byte(b.String())
}

// bytesIn is what the brokers took in for topic, over every cluster and
// partition: the stored entries, compressed, with their metadata.
func bytesIn(ctx context.Context, topic string) int64 {
	GinkgoHelper()
	var n int64
	for _, c := range bed.Clusters() {
		for _, st := range topicStats(ctx, c, topic) {
			n += st.BytesInCounter
		}
	}
	return n
}

var _ = Describe("CompressionLevel, KeyBasedBatching and per-cluster overrides", func() {
	It("CompressionLevel changes what ZSTD stores, and the messages read back intact; PINS that pulsar-client-go v0.21.0's ZLib ignores the level", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		value := text(64 << 10)
		levels := []struct {
			name  string
			level producer.Level
		}{{"faster", producer.FasterLevel}, {"default", producer.DefaultLevel}, {"better", producer.BetterLevel}}
		size := map[string]int64{}
		for _, codec := range []producer.Codec{producer.ZSTD, producer.ZLib} {
			for _, l := range levels {
				topic := newTopic(ctx, "", "level-"+codec.String()+"-"+l.name)
				p := openProducer(ctx, topic, producer.Batching(false), producer.Compression(codec), producer.CompressionLevel(l.level))
				_, err := p.Send(ctx, &producer.Message{Key: "text", Value: value})
				Expect(err).NotTo(HaveOccurred())
				got := keysOf(drainAll(ctx, topic, pulsar.ConsumerOptions{}))
				Expect(got).To(Equal([]string{"text"}))
				var n int64
				Eventually(ctx, func() int64 { n = bytesIn(ctx, topic); return n }).Should(BeNumerically(">", 0))
				size[codec.String()+"/"+l.name] = n
				GinkgoWriter.Printf("%-4s %-7s: %6d bytes stored for %d\n", codec, l.name, n, len(value))
			}
		}
		Expect(size["zstd/better"]).To(BeNumerically("<", size["zstd/faster"]), "ZSTD: Better stores less than Faster")
		Expect(size["zlib/better"]).To(Equal(size["zlib/faster"]),
			"pulsar-client-go v0.21.0 makes ZLib without a level (internal/batch_builder.go GetCompressionProvider); "+
				"if the sizes now differ, ZLib uses the level: update this spec")
		Expect(size["zlib/default"]).To(Equal(size["zlib/faster"]))
	})

	It("KeyBasedBatching puts each key's messages (by ordering key when set) in batches of their own; without it the partition's keys share one batch", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		const rounds = 5
		// entries sends rounds of messages of four keys placed on one
		// partition, the last two with one ordering key, and returns, by
		// stored entry, the grouping keys (ordering key, else key) of the
		// messages in it.
		entries := func(keyBatching bool) map[string]map[string]int {
			GinkgoHelper()
			topic := newTopic(ctx, "", "key-batching-"+strconv.FormatBool(keyBatching))
			p := openProducer(ctx, topic, producer.KeyBasedBatching(keyBatching), producer.Linger(time.Minute), producer.BatchMaxMessages(1000))
			keys := keysTogether(p, "kb-", 4)
			orderingKey := map[string]string{keys[2]: "shared", keys[3]: "shared"}
			var (
				mu   sync.Mutex
				errs []error
			)
			for r := range rounds {
				for _, k := range keys {
					p.SendAsync(ctx, &producer.Message{Key: k, OrderingKey: orderingKey[k], Value: []byte(k + "/" + strconv.Itoa(r))},
						func(_ producer.ID, _ *producer.Message, err error) {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						})
				}
			}
			Expect(p.Flush(ctx)).To(Succeed())
			Expect(errors.Join(errs...)).NotTo(HaveOccurred())
			cluster, _ := p.Placement(keys[0])
			got := subscribe(clusterNamed(cluster), plainClient(clusterNamed(cluster), nil), pulsar.ConsumerOptions{Topic: topic}).drain(ctx)
			Expect(got).To(HaveLen(rounds * len(keys)))
			out := map[string]map[string]int{}
			next := map[string]int{}
			for _, m := range got {
				k := m.Key()
				Expect(m.OrderingKey()).To(Equal(orderingKey[k]))
				Expect(string(m.Payload())).To(Equal(k+"/"+strconv.Itoa(next[k])), "a key's messages in order")
				next[k]++
				group := k
				if orderingKey[k] != "" {
					group = orderingKey[k]
				}
				e := strconv.FormatInt(m.ID().LedgerID(), 10) + ":" + strconv.FormatInt(m.ID().EntryID(), 10)
				if out[e] == nil {
					out[e] = map[string]int{}
				}
				out[e][group]++
			}
			GinkgoWriter.Printf("KeyBasedBatching(%v): entry -> messages by grouping key: %v\n", keyBatching, out)
			return out
		}
		shared := entries(false)
		Expect(shared).To(HaveLen(1), "one batch for the partition")
		own := entries(true)
		Expect(own).To(HaveLen(3), "one batch per key, the two keys with one ordering key together")
		groups := map[string]int{}
		for e, byGroup := range own {
			Expect(byGroup).To(HaveLen(1), "entry %s holds one grouping key", e)
			for g, n := range byGroup {
				groups[g] += n
			}
		}
		Expect(groups).To(HaveKeyWithValue("shared", 2*rounds))
		Expect(groups).To(HaveLen(3))
	})

	It("applies a cluster's producer overrides from the topology: its entries are stored with its codec, and its messages time out after its own send timeout", func(sctx SpecContext) {
		ctx := specCtx(sctx, 3*time.Minute)
		const (
			sendTimeout = time.Second
			longer      = 5 * sendTimeout
		)
		topo := bed.Topology()
		over, plain := bed.Clusters()[1], bed.Clusters()[0]
		Expect(topo.Clusters[1].Name).To(Equal(over.Name))
		topo.Clusters[1].Producer = topology.ProducerSettings{Compression: "zstd", SendTimeout: longer}
		topic := newTopic(ctx, "", "overrides")
		var (
			mu   sync.Mutex
			seen = map[string]pulsar.ProducerOptions{}
		)
		p, err := producer.New(ctx, topo, producer.Topic(topic), producer.SendTimeout(sendTimeout), producer.Compression(producer.LZ4),
			producer.ConfigureWriter(func(cluster string, _ int, o *pulsar.ProducerOptions) {
				mu.Lock()
				seen[cluster] = *o
				mu.Unlock()
			}))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close, context.Background())

		By("checking the options handed to pulsar-client-go")
		for _, c := range bed.Clusters() {
			wantCodec, wantTimeout := pulsar.LZ4, sendTimeout
			if c.Name == over.Name {
				wantCodec, wantTimeout = pulsar.ZSTD, longer
			}
			Expect(seen[c.Name].CompressionType).To(Equal(wantCodec), c.Name)
			Expect(seen[c.Name].SendTimeout).To(Equal(wantTimeout), c.Name)
		}

		By("checking the codec of the stored entries")
		value := text(4 << 10)
		keys := map[string]string{}
		for _, c := range bed.Clusters() {
			key := keyOn(p, "over-", c.Name)
			keys[c.Name] = key
			id, err := p.Send(ctx, &producer.Message{Key: key, Value: value})
			Expect(err).NotTo(HaveOccurred())
			e := storedEntry(ctx, c, topic, id.Partition, id.MessageID)
			want := "LZ4"
			if c.Name == over.Name {
				want = "ZSTD"
			}
			Expect(e.header.Get("X-Pulsar-compression")).To(Equal(want), c.Name)
		}
		got := byKey(drainAll(ctx, topic, pulsar.ConsumerOptions{}))
		for _, key := range keys {
			Expect(got[key].Payload()).To(Equal(value), key)
		}

		By("freezing two clusters (SIGSTOP) and timing a message to each until it fails")
		for _, c := range []string{plain.Name, over.Name} {
			victim := clusterNamed(c)
			Expect(victim.Pause()).To(Succeed())
			DeferCleanup(victim.Resume)
		}
		took := map[string]time.Duration{}
		errs := map[string]error{}
		var wg sync.WaitGroup
		for _, c := range []string{plain.Name, over.Name} {
			wg.Go(func() {
				defer GinkgoRecover()
				t0 := time.Now()
				_, err := p.Send(ctx, &producer.Message{Key: keys[c], Value: []byte("frozen")})
				mu.Lock()
				took[c], errs[c] = time.Since(t0), err
				mu.Unlock()
			})
		}
		wg.Wait()
		for _, c := range []string{plain.Name, over.Name} {
			Expect(clusterNamed(c).Resume()).To(Succeed())
		}
		GinkgoWriter.Printf("send timeout %s: failed after %s; %s (override %s): failed after %s\n",
			sendTimeout, took[plain.Name].Round(time.Millisecond), over.Name, longer, took[over.Name].Round(time.Millisecond))
		for c, err := range errs {
			Expect(err).To(MatchError(producer.ErrSendTimeout), c)
			Expect(producer.NotWritten(err)).To(BeFalse(), c)
		}
		Expect(took[plain.Name]).To(BeNumerically(">=", sendTimeout))
		Expect(took[plain.Name]).To(BeNumerically("<", longer), "the option's timeout, not the override")
		Expect(took[over.Name]).To(BeNumerically(">=", longer), "the override's timeout")
	})
})
