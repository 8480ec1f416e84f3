//go:build e2e

package consumerparity

import (
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/producer"
)

type order struct {
	ID    string `json:"id"`
	Cents int    `json:"cents"`
}

const orderSchema = `{"type":"record","name":"Order","namespace":"keyroute.e2e","fields":[{"name":"id","type":"string"},{"name":"cents","type":"int"}]}`

var _ = Describe("Typed values", func() {
	It("reads back as the same values what the producer's Typed[T] sent with a JSON schema, over every cluster", func(sctx SpecContext) {
		ctx := specCtx(sctx, 3*time.Minute)
		topic := newTopic(ctx, "typed")
		p := openProducer(ctx, topic, producer.Schema(pulsar.NewJSONSchema(orderSchema, nil)))
		tp, err := producer.NewTyped[order](p)
		Expect(err).NotTo(HaveOccurred())
		const n = 30
		want := map[string]order{}
		for i := range n {
			o := order{ID: fmt.Sprint("o-", i), Cents: 100 * i}
			_, err := tp.Send(ctx, o.ID, o)
			Expect(err).NotTo(HaveOccurred())
			want[o.ID] = o
		}
		c := openConsumer(ctx, topic, "typed", consumer.Schema(pulsar.NewJSONSchema(orderSchema, nil)))
		tc, err := consumer.NewTyped[order](c)
		Expect(err).NotTo(HaveOccurred())
		seen := map[string]bool{}
		for len(seen) < n {
			m, o, err := tc.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(o).To(Equal(want[m.Key]), m.Key)
			Expect(c.Ack(ctx, m)).To(Succeed())
			seen[m.Key] = true
		}
	})
})
