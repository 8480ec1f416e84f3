//go:build e2e

package consumer

import (
	"errors"
	"net/http"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
)

// clusterErrors returns every *consumer.ClusterError in err's tree (New
// joins one per failed cluster).
func clusterErrors(err error) []*consumer.ClusterError {
	var out []*consumer.ClusterError
	var walk func(error)
	walk = func(e error) {
		if ce, ok := e.(*consumer.ClusterError); ok {
			out = append(out, ce)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			if x := u.Unwrap(); x != nil {
				walk(x)
			}
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// expectOnlyCluster checks that err names exactly one cluster, name, in
// step op.
func expectOnlyCluster(err error, name, op string) *consumer.ClusterError {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	ces := clusterErrors(err)
	Expect(ces).To(HaveLen(1), "one cluster named in %v", err)
	Expect(ces[0].Cluster).To(Equal(name), "%v", err)
	Expect(ces[0].Op).To(Equal(op), "%v", err)
	return ces[0]
}

var _ = Describe("New with bad input", func() {
	It("fails with ErrNoTopic without a topic and ErrNoSubscription without a subscription", func(sctx SpecContext) {
		ctx := specCtx(sctx, time.Minute)
		topic := newTopic(ctx, "input")
		c, err := consumer.New(ctx, topo(), consumer.Subscription("input"))
		Expect(err).To(MatchError(consumer.ErrNoTopic))
		Expect(c).To(BeNil())
		c, err = consumer.New(ctx, topo(), consumer.Topic(topic))
		Expect(err).To(MatchError(consumer.ErrNoSubscription))
		Expect(c).To(BeNil())
	})

	DescribeTable("fails, naming that cluster, when one cluster's subscription is held by an Exclusive consumer",
		func(sctx SpecContext, typ consumer.SubscriptionType) {
			ctx := specCtx(sctx, 2*opTimeout)
			topic := newTopic(ctx, "held")
			holder := bed.Clusters()[2]
			client, err := bedsuite.Client(holder.ServiceURL, false)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(client.Close)
			pc, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "held", Type: pulsar.Exclusive})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(pc.Close)

			c, err := consumer.New(ctx, topo(), consumer.Topic(topic), consumer.Subscription("held"), consumer.Type(typ))
			GinkgoWriter.Printf("%s against a held Exclusive subscription: %v\n", typ, err)
			Expect(c).To(BeNil())
			ce := expectOnlyCluster(err, holder.Name, "subscribe")
			// pulsar-client-go v0.21.0 gives the broker's refusal as text
			// only (errors.New("server error: ConsumerBusy: ...")); the
			// consumer turns it into a *BrokerError (consumer/internals.go),
			// which this pins against a real broker.
			Expect(ce.Err).To(MatchError(consumer.ErrConsumerBusy))
			Expect(consumer.Reason(err)).To(Equal(consumer.ReasonConsumerBusy))
			var be *consumer.BrokerError
			Expect(errors.As(err, &be)).To(BeTrue())
			Expect(be.Code).To(Equal("ConsumerBusy"))

			// The control: the same New once the holder has closed. The
			// broker refuses while a consumer of the subscription is
			// attached; the subscription itself, left by an Exclusive
			// consumer, takes the new type.
			pc.Close()
			c, err = consumer.New(ctx, topo(), consumer.Topic(topic), consumer.Subscription("held"), consumer.Type(typ))
			Expect(err).NotTo(HaveOccurred(), "%s once the Exclusive holder has closed", typ)
			Expect(c.Close(ctx)).To(Succeed())
		},
		Entry("Exclusive", consumer.Exclusive),
		Entry("Failover", consumer.Failover),
		Entry("Shared", consumer.Shared),
		Entry("KeyShared", consumer.KeyShared),
	)

	It("fails with ErrTopicNotFound naming the one cluster of five without the topic, and creates nothing there", func(sctx SpecContext) {
		ctx := specCtx(sctx, 2*opTimeout)
		cs := bed.Clusters()
		lacking := cs[len(cs)-1]
		topic := newTopic(ctx, "partial", cs[:len(cs)-1]...)

		c, err := consumer.New(ctx, topo(), consumer.Topic(topic), consumer.Subscription("partial"))
		GinkgoWriter.Printf("topic on four clusters of five: %v\n", err)
		Expect(c).To(BeNil())
		Expect(err).To(MatchError(consumer.ErrTopicNotFound))
		expectOnlyCluster(err, lacking.Name, "check topic")
		Expect(adminGet(ctx, lacking, topicPath(topic)+"/stats", nil)).To(Equal(http.StatusNotFound), "the check created no topic on %s", lacking.Name)

		// The brokers create topics on first use: without the check,
		// New subscribes on lacking, which creates an empty topic there,
		// and nothing would tell.
		c, err = consumer.New(ctx, topo(), consumer.Topic(topic), consumer.Subscription("partial"), consumer.RequireTopic(false))
		Expect(err).NotTo(HaveOccurred(), "RequireTopic(false): the broker's auto topic creation hides the missing topic")
		Expect(c.Close(ctx)).To(Succeed())
		Expect(adminGet(ctx, lacking, topicPath(topic)+"/stats", nil)).To(Equal(http.StatusOK), "auto-created on %s", lacking.Name)
	})
})
