//go:build e2e

package parity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

// order is the value the schema specs send.
type order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// orderSchema is order's JSON schema; otherOrderSchema gives the same
// record an id of another type and drops amount, which no compatibility
// strategy but ALWAYS_COMPATIBLE accepts in either direction.
const (
	orderSchema      = `{"type":"record","name":"Order","namespace":"parity","fields":[{"name":"id","type":"string"},{"name":"amount","type":"int"}]}`
	otherOrderSchema = `{"type":"record","name":"Order","namespace":"parity","fields":[{"name":"id","type":"int"}]}`
)

// clusterErrors returns the *producer.ClusterError values in err (joined
// or not), by cluster.
func clusterErrors(err error) map[string]*producer.ClusterError {
	out := map[string]*producer.ClusterError{}
	var walk func(error)
	walk = func(err error) {
		if ce, ok := err.(*producer.ClusterError); ok {
			out[ce.Cluster] = ce
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// setStrategy sets the schema compatibility strategy of ns on every
// cluster and checks that the namespace reports it.
func setStrategy(ctx context.Context, ns, strategy string) {
	GinkgoHelper()
	for _, c := range bed.Clusters() {
		adminCall(ctx, c, http.MethodPut, "/admin/v2/namespaces/"+ns+"/schemaCompatibilityStrategy", strategy, nil)
		var got string
		adminCall(ctx, c, http.MethodGet, "/admin/v2/namespaces/"+ns+"/schemaCompatibilityStrategy", nil, &got)
		Expect(got).To(Equal(strategy), c.Name)
	}
}

var _ = Describe("Schema and Typed", func() {
	It("registers the schema on every cluster; Typed values are decoded by a plain consumer with the same schema; a value the schema cannot encode is refused, not written", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		topic := newTopic(ctx, "", "schema")
		p := openProducer(ctx, topic, producer.Schema(pulsar.NewJSONSchema(orderSchema, nil)))
		typed, err := producer.NewTyped[order](p)
		Expect(err).NotTo(HaveOccurred())

		const n = 20
		want := map[string]order{}
		for i := range n {
			o := order{ID: fmt.Sprintf("o-%d", i), Amount: 100 + i}
			want[o.ID] = o
			_, err := typed.Send(ctx, o.ID, o)
			Expect(err).NotTo(HaveOccurred(), o.ID)
		}
		// A value json.Marshal refuses: Typed[any] with a channel.
		anyTyped, err := producer.NewTyped[any](p)
		Expect(err).NotTo(HaveOccurred())
		_, err = anyTyped.Send(ctx, "bad", make(chan int))
		Expect(err).To(MatchError(producer.ErrBadMessage))
		Expect(producer.NotWritten(err)).To(BeTrue(), "%v", err)

		// NewTyped needs a Producer with a schema.
		plainP := openProducer(ctx, topic)
		_, err = producer.NewTyped[order](plainP)
		Expect(err).To(MatchError(producer.ErrBadOption))

		got := drainAll(ctx, topic, pulsar.ConsumerOptions{Schema: pulsar.NewJSONSchema(orderSchema, nil)})
		seen := map[string]order{}
		for cluster, msgs := range got {
			for _, m := range msgs {
				var o order
				Expect(m.GetSchemaValue(&o)).To(Succeed(), "%s: %s", cluster, m.Key())
				Expect(m.SchemaVersion()).NotTo(BeEmpty(), "%s: %s carries the schema version", cluster, m.Key())
				Expect(m.Key()).To(Equal(o.ID))
				seen[o.ID] = o
			}
		}
		Expect(seen).To(Equal(want), "every value once, the bad one not at all")

		for _, c := range bed.Clusters() {
			var info struct {
				Type string `json:"type"`
				Data string `json:"data"`
			}
			adminCall(ctx, c, http.MethodGet, "/admin/v2/schemas/"+topicPath(topic)+"/schema", nil, &info)
			Expect(info.Type).To(Equal("JSON"), c.Name)
			// The broker keeps the record's full name and its own layout.
			var def struct {
				Name   string `json:"name"`
				Fields []struct {
					Name string `json:"name"`
					Type string `json:"type"`
				} `json:"fields"`
			}
			Expect(json.Unmarshal([]byte(info.Data), &def)).To(Succeed(), info.Data)
			Expect(def.Name).To(Equal("parity.Order"), c.Name)
			Expect(def.Fields).To(HaveLen(2), c.Name)
			Expect([]string{def.Fields[0].Name, def.Fields[0].Type, def.Fields[1].Name, def.Fields[1].Type}).To(
				Equal([]string{"id", "string", "amount", "int"}), c.Name)
		}
	})

	It("fails New, naming only that cluster, when the topic holds an incompatible schema on one cluster (FULL compatibility); New succeeds once that schema is deleted", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*time.Minute)
		ns := newNamespace(ctx, "parity-schema")
		setStrategy(ctx, ns, "FULL")
		topic := newTopic(ctx, ns, "schema-clash")
		victim := bed.Clusters()[1]

		By("registering another schema for the topic on " + victim.Name + " with a plain producer")
		plain, err := plainClient(victim, nil).CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewJSONSchema(otherOrderSchema, nil)})
		Expect(err).NotTo(HaveOccurred())
		plain.Close()

		By("opening a keyroute producer with the order schema")
		p, err := producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.Schema(pulsar.NewJSONSchema(orderSchema, nil)))
		if p != nil {
			_ = p.Close(ctx)
		}
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Printf("New: %v\n", err)
		Expect(err).To(MatchError(producer.ErrConnect))
		failed := clusterErrors(err)
		Expect(failed).To(HaveLen(1), "only %s fails", victim.Name)
		Expect(failed).To(HaveKey(victim.Name))
		var perr *pulsar.Error
		if errors.As(err, &perr) {
			GinkgoWriter.Printf("pulsar-client-go result: %v\n", perr.Result())
		}

		By("deleting the other schema on " + victim.Name + ": the same New succeeds, so the schema was the cause")
		adminCall(ctx, victim, http.MethodDelete, "/admin/v2/schemas/"+topicPath(topic)+"/schema", nil, nil)
		p = openProducer(ctx, topic, producer.Schema(pulsar.NewJSONSchema(orderSchema, nil)))
		typed, err := producer.NewTyped[order](p)
		Expect(err).NotTo(HaveOccurred())
		key := keyOn(p, "clash-", victim.Name)
		_, err = typed.Send(ctx, key, order{ID: key, Amount: 7})
		Expect(err).NotTo(HaveOccurred())
		got := subscribe(victim, plainClient(victim, nil), pulsar.ConsumerOptions{Topic: topic, Schema: pulsar.NewJSONSchema(orderSchema, nil)}).drain(ctx)
		Expect(got).To(HaveLen(1))
		var o order
		Expect(got[0].GetSchemaValue(&o)).To(Succeed())
		Expect(o).To(Equal(order{ID: key, Amount: 7}))
	})
})
