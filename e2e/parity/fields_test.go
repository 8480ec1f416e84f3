//go:build e2e

package parity

import (
	"strconv"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

// arrival is a message a consumer took and when.
type arrival struct {
	msg pulsar.Message
	at  time.Time
}

var _ = Describe("per-message fields", func() {
	It("OrderingKey is read back by a plain consumer, batched and unbatched; Key still routes", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		topic := newTopic(ctx, "", "ordering-key")
		const n = 12
		sent := map[string]string{} // key -> ordering key ("" for none)
		for _, batching := range []bool{true, false} {
			p := openProducer(ctx, topic, producer.Batching(batching))
			for i := range n {
				key := "ok-" + strconv.FormatBool(batching) + "-" + strconv.Itoa(i)
				m := &producer.Message{Key: key, Value: []byte(key)}
				if i%3 != 0 {
					m.OrderingKey = "group-" + strconv.Itoa(i%3)
				}
				id, err := p.Send(ctx, m)
				Expect(err).NotTo(HaveOccurred())
				cl, part := p.Placement(key)
				Expect([]any{id.Cluster, id.Partition}).To(Equal([]any{cl, part}), "%s is placed by its Key", key)
				sent[key] = m.OrderingKey
			}
		}
		got := byKey(drainAll(ctx, topic, pulsar.ConsumerOptions{}))
		Expect(got).To(HaveLen(len(sent)))
		for key, ok := range sent {
			Expect(got[key].OrderingKey()).To(Equal(ok), key)
		}
	})

	It("DeliverAfter and DeliverAt: a Shared subscription gets the message no earlier than its time and after the key's later undelayed message; an Exclusive one gets it at once", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		const delay = 3 * time.Second
		topic := newTopic(ctx, "", "delayed")
		p := openProducer(ctx, topic)
		target := bed.Clusters()[0]
		key := keyOn(p, "delayed-", target.Name)
		client := plainClient(target, nil)
		shared := subscribe(target, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "shared", Type: pulsar.Shared})
		exclusive := subscribe(target, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "exclusive", Type: pulsar.Exclusive})

		t0 := time.Now()
		idAfter, err := p.Send(ctx, &producer.Message{Key: key, Value: []byte("after"), DeliverAfter: delay})
		Expect(err).NotTo(HaveOccurred())
		deliverAt := time.Now().Add(delay)
		idAt, err := p.Send(ctx, &producer.Message{Key: key, Value: []byte("at"), DeliverAt: deliverAt})
		Expect(err).NotTo(HaveOccurred())
		_, err = p.Send(ctx, &producer.Message{Key: key, Value: []byte("plain")})
		Expect(err).NotTo(HaveOccurred())
		for _, id := range []producer.ID{idAfter, idAt} {
			Expect(id.MessageID.BatchSize()).To(BeNumerically("<=", 1), "a delayed message is sent alone")
		}

		take := func(s *plainSub, n int) map[string]arrival {
			GinkgoHelper()
			out := map[string]arrival{}
			for len(out) < n {
				m, err := s.cons.Receive(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(s.cons.Ack(m)).To(Succeed())
				out[string(m.Payload())] = arrival{m, time.Now()}
			}
			return out
		}
		ex := take(exclusive, 3)
		sh := take(shared, 3)
		for _, v := range []string{"after", "at", "plain"} {
			GinkgoWriter.Printf("%-5s exclusive %8s  shared %8s after the first send\n", v,
				ex[v].at.Sub(t0).Round(time.Millisecond), sh[v].at.Sub(t0).Round(time.Millisecond))
		}
		Expect(ex["after"].at).To(BeTemporally("<", t0.Add(delay)), "Exclusive: DeliverAfter does not delay")
		Expect(ex["at"].at).To(BeTemporally("<", deliverAt), "Exclusive: DeliverAt does not delay")
		Expect(sh["after"].at).To(BeTemporally(">=", t0.Add(delay)), "Shared: not before DeliverAfter")
		Expect(sh["at"].at).To(BeTemporally(">=", deliverAt), "Shared: not before DeliverAt")
		Expect(sh["plain"].at).To(BeTemporally("<", sh["after"].at), "the later undelayed message comes first")
		Expect(sh["plain"].at).To(BeTemporally("<", t0.Add(delay)), "the undelayed message is not held back")
	})

	It("ReplicationClusters and DisableReplication are accepted, sent alone, read back, and stored as the message's replicate_to (which a consumer cannot see)", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		topic := newTopic(ctx, "", "replication")
		p := openProducer(ctx, topic)
		target := bed.Clusters()[0]
		cases := []struct {
			name string
			msg  producer.Message
			want []string // the stored replicate_to
		}{
			{"to", producer.Message{ReplicationClusters: []string{target.Name, "parity-elsewhere"}}, []string{target.Name, "parity-elsewhere"}},
			// pulsar-client-go sends DisableReplication as replicate_to
			// ["__local__"].
			{"off", producer.Message{DisableReplication: true}, []string{"__local__"}},
			{"default", producer.Message{}, nil},
		}
		ids := map[string]producer.ID{}
		for i, c := range cases {
			m := c.msg
			m.Key = keyOn(p, "repl-"+c.name+"-", target.Name)
			m.Value = []byte(c.name)
			id, err := p.Send(ctx, &m)
			Expect(err).NotTo(HaveOccurred(), c.name)
			ids[m.Key] = id
			cases[i].msg.Key = m.Key
		}
		got := byKey(map[string][]pulsar.Message{target.Name: subscribe(target, plainClient(target, nil), pulsar.ConsumerOptions{Topic: topic}).drain(ctx)})
		Expect(got).To(HaveLen(len(cases)))
		for _, c := range cases {
			m := got[c.msg.Key]
			Expect(string(m.Payload())).To(Equal(c.name))
			Expect(m.IsReplicated()).To(BeFalse(), c.name)
			id := ids[c.msg.Key]
			e := storedEntry(ctx, target, topic, id.Partition, id.MessageID)
			Expect(e.header.Values("X-Pulsar-replicated-to")).To(Equal(c.want), "%s: the broker's copy", c.name)
			if c.want != nil {
				Expect(e.header.Get("X-Pulsar-num-batch-message")).To(BeEmpty(), "%s is sent alone", c.name)
			}
		}
	})

	It("SequenceID is the stored message's sequence id", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		topic := newTopic(ctx, "", "sequence")
		p := openProducer(ctx, topic, producer.Batching(false))
		target := bed.Clusters()[0]
		key := keyOn(p, "seq-", target.Name)
		var ids []producer.ID
		for _, seq := range []int64{1000, 1001, 5000} {
			id, err := p.Send(ctx, &producer.Message{Key: key, Value: []byte(strconv.FormatInt(seq, 10)), SequenceID: &seq})
			Expect(err).NotTo(HaveOccurred())
			ids = append(ids, id)
		}
		got := subscribe(target, plainClient(target, nil), pulsar.ConsumerOptions{Topic: topic}).drain(ctx)
		Expect(got).To(HaveLen(len(ids)))
		for i, id := range ids {
			e := storedEntry(ctx, target, topic, id.Partition, id.MessageID)
			Expect(e.header.Get("X-Pulsar-sequence-id")).To(Equal(string(got[i].Payload())))
		}
	})
})
