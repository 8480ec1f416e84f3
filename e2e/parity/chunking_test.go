//go:build e2e

package parity

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

// randomBytes returns n bytes that do not compress, the same for a seed.
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

var _ = Describe("Chunking", func() {
	It("splits a message larger than the chunk size, or than the broker's maxMessageSize, into chunks that a plain consumer reads back whole; without chunking a message above maxMessageSize fails, not written", func(sctx SpecContext) {
		ctx := specCtx(sctx, 3*time.Minute)
		topic := newTopic(ctx, "", "chunking")
		const (
			chunk = 16 << 10
			small = 100 << 10              // several chunks, below the broker's limit
			large = maxMessageSize * 7 / 2 // 3.5 times the broker's limit
		)
		By("refusing Chunking with batching on, as pulsar-client-go cannot chunk batches")
		_, err := producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.Chunking(chunk))
		Expect(err).To(MatchError(producer.ErrBadOption))

		// NoCompression, so that the chunk counts follow from the sizes.
		chunked := openProducer(ctx, topic, producer.Batching(false), producer.Chunking(chunk), producer.Compression(producer.NoCompression))
		wide := openProducer(ctx, topic, producer.Batching(false), producer.Chunking(16*maxMessageSize), producer.Compression(producer.NoCompression))
		plainUnbatched := openProducer(ctx, topic, producer.Batching(false), producer.Compression(producer.NoCompression))
		plainBatched := openProducer(ctx, topic)

		cases := []struct {
			name   string
			p      *producer.Producer
			size   int
			chunks int // 0: refused
		}{
			{"tiny, chunking on: one entry", chunked, chunk / 2, 1},
			{"several chunk sizes", chunked, small, (small + chunk - 1) / chunk},
			{"above maxMessageSize, chunk size below it", chunked, large, (large + chunk - 1) / chunk},
			// The chunk size is capped by maxMessageSize less the
			// metadata: 3.5 times the limit needs 4 chunks.
			{"above maxMessageSize, chunk size above it", wide, large, 4},
			{"above maxMessageSize, chunking off, batching off", plainUnbatched, large, 0},
			{"above maxMessageSize, chunking off, batching on", plainBatched, large, 0},
		}
		type sent struct {
			key   string
			value []byte
			id    producer.ID
		}
		var ok []sent
		var refusedKeys []string
		for i, c := range cases {
			key := "chunk-" + strconv.Itoa(i)
			value := randomBytes(c.size, uint64(i+1))
			id, err := c.p.Send(ctx, &producer.Message{Key: key, Value: value})
			if c.chunks == 0 {
				Expect(err).To(MatchError(producer.ErrMessageTooLarge), c.name)
				Expect(producer.NotWritten(err)).To(BeTrue(), "%s: %v", c.name, err)
				Expect(producer.Reason(err)).To(Equal(producer.ReasonMessageTooLarge), c.name)
				refusedKeys = append(refusedKeys, key)
				// A trailer with the same key: what arrives for it is
				// what was stored.
				_, err = plainBatched.Send(ctx, &producer.Message{Key: key, Value: []byte("trailer")})
				Expect(err).NotTo(HaveOccurred())
				continue
			}
			Expect(err).NotTo(HaveOccurred(), c.name)
			ok = append(ok, sent{key, value, id})
			e := storedEntry(ctx, clusterNamed(id.Cluster), topic, id.Partition, id.MessageID)
			if c.chunks == 1 {
				Expect(e.header.Get("X-Pulsar-num-chunks-from-msg")).To(BeEmpty(), "%s: not chunked", c.name)
				continue
			}
			GinkgoWriter.Printf("%-50s %7d bytes in %2s chunks (last chunk %s)\n", c.name, c.size, e.header.Get("X-Pulsar-num-chunks-from-msg"), id)
			Expect(e.header.Get("X-Pulsar-num-chunks-from-msg")).To(Equal(strconv.Itoa(c.chunks)), c.name)
			Expect(e.header.Get("X-Pulsar-chunk-id")).To(Equal(strconv.Itoa(c.chunks-1)), "%s: the id is the last chunk's", c.name)
			Expect(e.header.Get("X-Pulsar-total-chunk-msg-size")).To(Equal(strconv.Itoa(c.size)), c.name)
		}

		got := byKey(drainAll(ctx, topic, pulsar.ConsumerOptions{}))
		Expect(got).To(HaveLen(len(ok) + len(refusedKeys)))
		for _, s := range ok {
			m := got[s.key]
			Expect(m).NotTo(BeNil(), s.key)
			Expect(len(m.Payload())).To(Equal(len(s.value)), s.key)
			Expect(bytes.Equal(m.Payload(), s.value)).To(BeTrue(), "%s arrives whole and intact", s.key)
		}
		for _, k := range refusedKeys {
			Expect(string(got[k].Payload())).To(Equal("trailer"), "%s: only its trailer was stored", k)
		}
	})
})
