//go:build e2e

package consumerparity

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/producer"
)

var _ = Describe("Dead letters", func() {
	It("sends a poison message, after MaxDeliveries nacked deliveries, to the dead-letter topic of its own cluster; the good ones are delivered once", func(sctx SpecContext) {
		ctx := specCtx(sctx, 3*time.Minute)
		topic := newTopic(ctx, "poison")
		p := openProducer(ctx, topic)
		poisonOn := bed.Clusters()[1]
		poisonKey := keyOn(p, poisonOn.Name)
		const maxDeliveries, good = 3, 20
		for i := range good {
			_, err := p.Send(ctx, &producer.Message{Key: fmt.Sprint("good-", i), Value: []byte("ok")})
			Expect(err).NotTo(HaveOccurred())
		}
		_, err := p.Send(ctx, &producer.Message{Key: poisonKey, Value: []byte("poison"), Properties: map[string]string{"why": "test"}})
		Expect(err).NotTo(HaveOccurred())

		const sub = "dlq"
		c := openConsumer(ctx, topic, sub, consumer.Type(consumer.Shared), consumer.NackRedeliveryDelay(200*time.Millisecond),
			consumer.DeadLetter(consumer.DeadLetterPolicy{MaxDeliveries: maxDeliveries, InitialSubscription: "audit"}))
		dlqTopic := consumer.DeadLetterTopic(topic, sub)

		// The dead-letter topic is read on the poison's cluster with a plain
		// client: the message is there once the consumer has given up.
		client, err := bedsuite.Client(poisonOn.ServiceURL, false)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(client.Close)

		poisonSeen, goodSeen := 0, map[string]int{}
		dead := make(chan pulsar.Message, 1)
		go func() {
			defer GinkgoRecover()
			// The "audit" subscription exists from the topic's creation;
			// it is read from the earliest message.
			var dc pulsar.Consumer
			Eventually(ctx, func() error {
				var err error
				dc, err = client.Subscribe(pulsar.ConsumerOptions{Topic: dlqTopic, SubscriptionName: "audit",
					SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
				return err
			}).Should(Succeed())
			defer dc.Close()
			m, err := dc.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			dead <- m
		}()
		var dm pulsar.Message
		for dm == nil || len(goodSeen) < good {
			// A poll, not a bound: a Receive that times out only loops, so
			// that the dead-letter reader's result is looked at between
			// reads; the spec's own ctx bounds the whole wait.
			rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			m, err := c.Receive(rctx)
			cancel()
			if err == nil {
				if m.Key == poisonKey {
					poisonSeen++
					Expect(m.RedeliveryCount).To(BeEquivalentTo(poisonSeen - 1))
					Expect(c.Nack(m)).To(Succeed())
				} else {
					goodSeen[m.Key]++
					Expect(c.Ack(ctx, m)).To(Succeed())
				}
			}
			if dm == nil {
				select {
				case dm = <-dead:
				default:
				}
			}
		}
		Expect(string(dm.Payload())).To(Equal("poison"))
		Expect(dm.Key()).To(Equal(poisonKey))
		Expect(dm.Properties()).To(HaveKeyWithValue("why", "test"))
		Expect(poisonSeen).To(Equal(maxDeliveries), "delivered MaxDeliveries times, then dead-lettered")
		Expect(goodSeen).To(HaveLen(good))
		for k, n := range goodSeen {
			Expect(n).To(Equal(1), k)
		}
	})
})
