//go:build e2e

package security

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// addBadToken is the spec of an Update that adds a cluster whose token
// the brokers refuse (signed with another key), to a producer and a
// consumer running on the other cluster.
func addBadToken(ctx SpecContext) {
	const startTimeout = 5 * time.Second // the producer's and consumer's StartTimeout
	topo := bed.Topology()
	for i := range topo.Clusters {
		// pulsar-client-go retries a refused lookup until the operation
		// timeout: keep it short.
		topo.Clusters[i].Client.OperationTimeout = 10 * time.Second
		topo.Clusters[i].Client.ConnectionTimeout = 5 * time.Second
	}
	good := &topology.Topology{Clusters: topo.Clusters[:1]}
	bad := &topology.Topology{Clusters: slices.Clone(topo.Clusters)}
	victim := bad.Clusters[len(bad.Clusters)-1].Name
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	bad.Clusters[len(bad.Clusters)-1].Auth = topology.Auth{Token: testbed.SignToken(key, testbed.ClientRole)}
	topic := newTopic(ctx, "badtoken")
	// A bound on each call: the added cluster's StartTimeout and
	// operation timeout, doubled.
	bound := 2 * (startTimeout + topo.Clusters[0].Client.OperationTimeout)

	p, err := producer.New(ctx, good, producer.Topic(topic), producer.StartTimeout(startTimeout), producer.OnClusterDown(producer.FailFast))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) { _ = p.Close(ctx) })
	c, err := consumer.New(ctx, good, consumer.Topic(topic), consumer.Subscription("badtoken"), consumer.StartTimeout(startTimeout))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) { _ = c.Close(ctx) })

	timed := func(what string, call func(context.Context) error) error {
		cctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		t0 := time.Now()
		err := call(cctx)
		GinkgoWriter.Printf("%s took %s: %v\n", what, time.Since(t0).Round(time.Millisecond), err)
		Expect(cctx.Err()).NotTo(HaveOccurred(), "%s came back by itself within %s", what, bound)
		return err
	}
	// The consumer asks the added cluster's admin API whether the topic
	// is there first: refused (401), named, nothing applied.
	cerr := timed("consumer.Update", func(ctx context.Context) error { return c.Update(ctx, bad) })
	var cce *consumer.ClusterError
	Expect(errors.As(cerr, &cce)).To(BeTrue(), "a *consumer.ClusterError: %v", cerr)
	Expect(cce.Cluster).To(Equal(victim))
	var names []string
	for _, h := range c.Health(ctx) {
		names = append(names, h.Cluster)
	}
	Expect(names).To(Equal([]string{good.Clusters[0].Name}), "nothing applied")

	// pulsar-client-go v0.21.0 reports a refused token as no answer (its
	// lookup times out, the log says why): the producer adds the cluster
	// down at StartTimeout, as one that does not answer, and its keys
	// fail fast. Should pulsar-client-go report the refusal, Update
	// refuses it (ErrConnect), naming it.
	perr := timed("producer.Update", func(ctx context.Context) error { return p.Update(ctx, bad) })
	if perr != nil {
		Expect(errors.Is(perr, producer.ErrConnect)).To(BeTrue(), "%v", perr)
		Expect(perr.Error()).To(ContainSubstring(victim))
	} else {
		for _, h := range p.Health() {
			GinkgoWriter.Printf("producer: %s up %v: %v\n", h.Name, h.Up, h.Err)
			Expect(h.Up).To(Equal(h.Name != victim), h.Name)
		}
		var down, ok int
		for i := range 50 {
			_, err := p.Send(ctx, &producer.Message{Key: fmt.Sprint("k", i), Value: []byte("v")})
			switch {
			case err == nil:
				ok++
			case errors.Is(err, producer.ErrClusterDown):
				var se *producer.SendError
				Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
				Expect(se.Cluster).To(Equal(victim))
				down++
			default:
				Fail(fmt.Sprintf("Send: %v", err))
			}
		}
		GinkgoWriter.Printf("sends: %d acknowledged, %d failed fast on %s\n", ok, down, victim)
		Expect(ok).To(BeNumerically(">", 0))
		Expect(down).To(BeNumerically(">", 0))
	}
	Expect(timed("producer.Close", p.Close)).To(Succeed())
	Expect(timed("consumer.Close", c.Close)).To(Succeed())
}
