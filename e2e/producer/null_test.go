//go:build e2e

package producer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

// trailer is the payload of the message sent after each case with the
// same key: a case that has not arrived when its trailer has never will.
const trailer = "trailer"

// payloadCase is one way of giving a message's payload.
type payloadCase struct {
	name string
	msg  func(key string) *producer.Message
}

var payloadCases = []payloadCase{
	{"nil Value", func(k string) *producer.Message { return &producer.Message{Key: k} }},
	{"empty Value", func(k string) *producer.Message { return &producer.Message{Key: k, Value: []byte{}} }},
	{`Value "x"`, func(k string) *producer.Message { return &producer.Message{Key: k, Value: []byte("x")} }},
	{"NullValue", func(k string) *producer.Message { return &producer.Message{Key: k, NullValue: true} }},
}

// sent is a message the SDK acknowledged.
type sent struct {
	key string
	c   payloadCase
	id  producer.ID
}

// sendCases sends every payload case through Send and through SendAsync,
// each with its own key (prefix/method/case) and followed by a trailer with
// that key, and returns what was acknowledged, in order.
func sendCases(ctx context.Context, p *producer.Producer, prefix string, cases []payloadCase) []sent {
	GinkgoHelper()
	var (
		mu   sync.Mutex
		out  []sent
		errs []error
	)
	for _, c := range cases {
		key := prefix + "/Send/" + c.name
		id, err := p.Send(ctx, c.msg(key))
		Expect(err).NotTo(HaveOccurred(), key)
		out = append(out, sent{key, c, id})
		_, err = p.Send(ctx, &producer.Message{Key: key, Value: []byte(trailer)})
		Expect(err).NotTo(HaveOccurred(), key)
	}
	for _, c := range cases {
		key := prefix + "/SendAsync/" + c.name
		p.SendAsync(ctx, c.msg(key), func(id producer.ID, _ *producer.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				return
			}
			out = append(out, sent{key, c, id})
		})
		p.SendAsync(ctx, &producer.Message{Key: key, Value: []byte(trailer)}, func(_ producer.ID, _ *producer.Message, err error) {
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s trailer: %w", key, err))
				mu.Unlock()
			}
		})
	}
	Expect(p.Flush(ctx)).To(Succeed())
	mu.Lock()
	defer mu.Unlock()
	Expect(errs).To(BeEmpty())
	return out
}

func keysOf(s []sent) []string {
	keys := make([]string, len(s))
	for i, m := range s {
		keys[i] = m.key
	}
	return keys
}

// expectArrivedAsSent checks that got, the one message of a key read back,
// is the message the SDK acknowledged as id: same cluster and position.
func expectArrivedAsSent(m sent, got []pulsar.Message) pulsar.Message {
	GinkgoHelper()
	Expect(got).To(HaveLen(1), "%s: the messages before its trailer", m.key)
	g := got[0]
	Expect(g.Topic()).To(HaveSuffix(fmt.Sprintf("-partition-%d", m.id.Partition)), m.key)
	Expect([3]int64{g.ID().LedgerID(), g.ID().EntryID(), int64(g.ID().BatchIdx())}).To(Equal(
		[3]int64{m.id.MessageID.LedgerID(), m.id.MessageID.EntryID(), int64(m.id.MessageID.BatchIdx())}), m.key)
	return g
}

var _ = Describe("null values and empty payloads, read back with plain pulsar-client-go", func() {
	It("batching on: a nil or empty Value arrives as an empty payload that is not a null value, NullValue as a null value (Send and SendAsync)", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		topic := newTopic(ctx, "null-batched")
		t := newTap(ctx, topic, "verify")
		p := openProducer(ctx, topic)

		acked := sendCases(ctx, p, "batched", payloadCases)
		Expect(acked).To(HaveLen(2 * len(payloadCases)))
		got := t.untilTrailers(ctx, trailer, keysOf(acked))
		for _, m := range acked {
			g := expectArrivedAsSent(m, got[m.key])
			e := storedEntry(ctx, clusterNamed(m.id.Cluster), topic, m.id.Partition, m.id.MessageID)
			Expect(e.header.Get("X-Pulsar-Num-Batch-Message")).NotTo(BeEmpty(), "%s was sent in a batch", m.key)
			switch m.c.name {
			case "NullValue":
				Expect(g.IsNullValue()).To(BeTrue(), m.key)
				Expect(g.Payload()).To(BeEmpty(), m.key)
			case `Value "x"`:
				Expect(g.IsNullValue()).To(BeFalse(), m.key)
				Expect(g.Payload()).To(Equal([]byte("x")), m.key)
			default: // nil and empty Value
				Expect(g.IsNullValue()).To(BeFalse(), "%s must not be a tombstone", m.key)
				Expect(g.Payload()).To(BeEmpty(), m.key)
			}
		}
		Expect(t.discards()).To(BeZero(), "the consumers' log:\n%s", t.logs)
	})

	It(`batching off: Value "x" arrives as sent and NullValue as a null value, with every codec (Send and SendAsync)`, func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		By("creating the topic")
		topic := newTopic(ctx, "null-unbatched")
		By("subscribing")
		t := newTap(ctx, topic, "verify")
		var acked []sent
		for _, codec := range []producer.Codec{producer.NoCompression, producer.LZ4, producer.ZLib, producer.ZSTD} {
			By("producing with " + codec.String())
			p, err := producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.Batching(false), producer.Compression(codec))
			Expect(err).NotTo(HaveOccurred())
			acked = append(acked, sendCases(ctx, p, "unbatched-"+codec.String(), payloadCases[2:])...)
			By("closing")
			Expect(p.Close(ctx)).To(Succeed())
		}
		By("reading back")
		got := t.untilTrailers(ctx, trailer, keysOf(acked))
		By("checking")
		for _, m := range acked {
			g := expectArrivedAsSent(m, got[m.key])
			Expect(m.id.MessageID.BatchSize()).To(BeNumerically("<=", 1), "%s was sent alone", m.key)
			e := storedEntry(ctx, clusterNamed(m.id.Cluster), topic, m.id.Partition, m.id.MessageID)
			Expect(e.header.Get("X-Pulsar-Num-Batch-Message")).To(BeEmpty(), "%s is not a batch", m.key)
			if m.c.name == "NullValue" {
				Expect(g.IsNullValue()).To(BeTrue(), m.key)
				Expect(g.Payload()).To(BeEmpty(), m.key)
			} else {
				Expect(g.IsNullValue()).To(BeFalse(), m.key)
				Expect(g.Payload()).To(Equal([]byte("x")), m.key)
			}
		}
	})

	// The broker stores an empty payload sent without batching correctly,
	// but pulsar-client-go v0.21.0's consumer cannot read it back:
	//
	//   - uncompressed, the entry has no payload bytes and no properties, so
	//     MessageReader.ReadMessage returns ErrEOM (internal/commands.go:149;
	//     only an entry with properties gets []byte{}, :146), and
	//     MessageReceived discards the message as corrupted
	//     (consumer_partition.go:1385, BatchDeSerializeError), acking it:
	//     the subscription never delivers it.
	//   - compressed, the producer compresses the empty payload into a
	//     non-empty block (producer_partition.go:1272; for LZ4 the single
	//     header byte 0x00, internal/compression/lz4.go:62) and sets
	//     UncompressedSize 0 (producer_partition.go:724); the consumer
	//     decompresses only when UncompressedSize > 0
	//     (consumer_partition.go:1331, upstream PR #1280), so it hands the
	//     compressed block to the application as the payload.
	//
	// A nil or empty Value through a producer made with Batching(false)
	// therefore does not read back as the empty payload the SDK promises
	// with pulsar-client-go consumers (batched, the default, it does: see
	// above). This spec pins that upstream behaviour so that it fails, and
	// is revisited, when pulsar-client-go changes.
	It("batching off: PINS pulsar-client-go v0.21.0's consumer: an empty payload the broker stored is discarded uncompressed and arrives as the codec's bytes compressed", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		topic := newTopic(ctx, "empty-unbatched")
		t := newTap(ctx, topic, "verify")
		var acked []sent
		codecOf := map[string]producer.Codec{}
		for _, codec := range []producer.Codec{producer.NoCompression, producer.LZ4, producer.ZLib, producer.ZSTD} {
			p, err := producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.Batching(false), producer.Compression(codec))
			Expect(err).NotTo(HaveOccurred())
			s := sendCases(ctx, p, "unbatched-"+codec.String(), payloadCases[:2])
			for _, m := range s {
				codecOf[m.key] = codec
			}
			acked = append(acked, s...)
			Expect(p.Close(ctx)).To(Succeed())
		}
		// The broker's copy: an entry of its own, an empty payload, not a
		// null value.
		for _, m := range acked {
			Expect(m.id.MessageID.BatchSize()).To(BeNumerically("<=", 1), "%s was sent alone", m.key)
			e := storedEntry(ctx, clusterNamed(m.id.Cluster), topic, m.id.Partition, m.id.MessageID)
			Expect(e.body).To(BeEmpty(), "%s: the broker's payload", m.key)
			Expect(e.header.Get("X-Pulsar-Null-Value")).To(BeEmpty(), "%s is not a null value", m.key)
			Expect(e.header.Get("X-Pulsar-Num-Batch-Message")).To(BeEmpty(), "%s is not a batch", m.key)
			Expect(e.header.Get("X-Pulsar-Uncompressed-Size")).To(Equal("0"), m.key)
		}
		got := t.untilTrailers(ctx, trailer, keysOf(acked))
		discarded := 0
		for _, m := range acked {
			g := got[m.key]
			if codecOf[m.key] == producer.NoCompression {
				Expect(g).To(BeEmpty(), "%s: uncompressed, pulsar-client-go v0.21.0 discards it (consumer_partition.go:1385); "+
					"if it now arrives as an empty payload, upstream fixed it: update this spec and the SDK docs", m.key)
				discarded++
				continue
			}
			Expect(g).To(HaveLen(1), m.key)
			GinkgoWriter.Printf("%s: read back as %q (null value %v)\n", m.key, g[0].Payload(), g[0].IsNullValue())
			Expect(g[0].IsNullValue()).To(BeFalse(), m.key)
			Expect(g[0].Payload()).NotTo(BeEmpty(), "%s: compressed, pulsar-client-go v0.21.0 returns the compressed block (consumer_partition.go:1331); "+
				"if it now arrives empty, upstream fixed it: update this spec and the SDK docs", m.key)
			if codecOf[m.key] == producer.LZ4 {
				Expect(g[0].Payload()).To(Equal([]byte{0}), "%s: LZ4's block for no input", m.key)
			}
		}
		Expect(discarded).To(Equal(4))
		Expect(t.discards()).To(Equal(discarded), "the consumers' log:\n%s", t.logs)
		Expect(t.logs.String()).To(ContainSubstring("validationError=BatchDeSerializeError"))
	})

	// The SDK sends every transactional message alone (DeliverAt
	// sendAlone, producer/internals.go), whatever Batching says, so an
	// empty Value in a transaction reads back as in the spec above.
	It("in a transaction: PINS the same pulsar-client-go v0.21.0 consumer behaviour: messages are sent alone, so an empty Value is discarded uncompressed and arrives as the codec's bytes compressed", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		topic := newTopic(ctx, "empty-txn")
		t := newTap(ctx, topic, "verify")
		var keys []string
		type staged struct {
			key   string
			codec producer.Codec
			c     payloadCase
			id    producer.ID
		}
		var all []staged
		for _, codec := range []producer.Codec{producer.NoCompression, producer.LZ4} {
			p, err := producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.Transactions(true), producer.Compression(codec))
			Expect(err).NotTo(HaveOccurred())
			tx, err := p.BeginTxn(producer.TxnTimeout(30 * time.Second))
			Expect(err).NotTo(HaveOccurred())
			var these []staged
			for _, c := range payloadCases {
				key := "txn-" + codec.String() + "/" + c.name
				Expect(tx.Send(c.msg(key))).To(Succeed())
				these = append(these, staged{key: key, codec: codec, c: c})
			}
			res, err := tx.Commit(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.IDs).To(HaveLen(len(these)))
			for i := range these {
				these[i].id = res.IDs[i]
				keys = append(keys, these[i].key)
				_, err := p.Send(ctx, &producer.Message{Key: these[i].key, Value: []byte(trailer)})
				Expect(err).NotTo(HaveOccurred())
			}
			all = append(all, these...)
			Expect(p.Close(ctx)).To(Succeed())
		}
		got := t.untilTrailers(ctx, trailer, keys)
		discarded := 0
		for _, m := range all {
			e := storedEntry(ctx, clusterNamed(m.id.Cluster), topic, m.id.Partition, m.id.MessageID)
			Expect(e.header.Get("X-Pulsar-Num-Batch-Message")).To(BeEmpty(), "%s: a transactional message is sent alone", m.key)
			g := got[m.key]
			switch {
			case m.c.name == "NullValue":
				Expect(g).To(HaveLen(1), m.key)
				Expect(g[0].IsNullValue()).To(BeTrue(), m.key)
			case m.c.name == `Value "x"`:
				Expect(g).To(HaveLen(1), m.key)
				Expect(g[0].Payload()).To(Equal([]byte("x")), m.key)
			case m.codec == producer.NoCompression:
				Expect(e.body).To(BeEmpty(), "%s: the broker's payload", m.key)
				Expect(g).To(BeEmpty(), "%s: uncompressed, pulsar-client-go v0.21.0 discards it (consumer_partition.go:1385); "+
					"if it now arrives as an empty payload, upstream fixed it: update this spec and the SDK docs", m.key)
				discarded++
			default:
				Expect(e.body).To(BeEmpty(), "%s: the broker's payload", m.key)
				Expect(g).To(HaveLen(1), m.key)
				Expect(g[0].Payload()).To(Equal([]byte{0}), "%s: LZ4's block for no input (consumer_partition.go:1331); "+
					"if it now arrives empty, upstream fixed it: update this spec and the SDK docs", m.key)
			}
		}
		Expect(discarded).To(Equal(2))
		Expect(t.discards()).To(Equal(discarded), "the consumers' log:\n%s", t.logs)
	})

	It("refuses NullValue with a non-empty Value with ErrBadMessage: not written, Send and SendAsync alike", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		topic := newTopic(ctx, "null-bad")
		t := newTap(ctx, topic, "verify")
		p := openProducer(ctx, topic)
		bad := func(key string) *producer.Message {
			return &producer.Message{Key: key, Value: []byte("not empty"), NullValue: true}
		}
		expectBad := func(err error, key string) {
			GinkgoHelper()
			Expect(err).To(MatchError(producer.ErrBadMessage), key)
			Expect(producer.NotWritten(err)).To(BeTrue(), "%s: %v", key, err)
			Expect(producer.Reason(err)).To(Equal(producer.ReasonBadMessage), key)
			var se *producer.SendError
			Expect(err).To(BeAssignableToTypeOf(se))
			Expect(err.(*producer.SendError).Key).To(Equal(key))
		}
		_, err := p.Send(ctx, bad("bad/Send"))
		expectBad(err, "bad/Send")
		done := make(chan error, 1)
		p.SendAsync(ctx, bad("bad/SendAsync"), func(_ producer.ID, _ *producer.Message, err error) { done <- err })
		Expect(p.Flush(ctx)).To(Succeed()) // the callback has run
		Expect(done).To(HaveLen(1))
		expectBad(<-done, "bad/SendAsync")

		// Nothing was written: only the trailers arrive.
		keys := []string{"bad/Send", "bad/SendAsync"}
		for _, k := range keys {
			_, err := p.Send(ctx, &producer.Message{Key: k, Value: []byte(trailer)})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(t.untilTrailers(ctx, trailer, keys)).To(BeEmpty())
	})
})
