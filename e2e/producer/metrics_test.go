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
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/keyroute/keyroute/producer"
)

// byCluster sums the values of a gathered counter (or gauge) family by
// its "cluster" label; series without one are summed under "".
func byCluster(families []*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			cluster := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" {
					cluster = l.GetValue()
				}
			}
			switch {
			case m.Counter != nil:
				out[cluster] += m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[cluster] += m.GetGauge().GetValue()
			}
		}
	}
	return out
}

var _ = Describe("pulsar-client-go metrics through ConfigureClient", func() {
	It("keeps one series per cluster, labelled with the cluster, counting what was published there", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		topic := newTopic(ctx, "metrics")
		reg := prometheus.NewRegistry()
		var (
			mu         sync.Mutex
			configured []string
			labels     = map[string]map[string]string{} // by cluster: the labels ConfigureClient was given
		)
		p, err := producer.New(ctx, bed.Topology(), producer.Topic(topic),
			producer.ConfigureClient(func(cluster string, o *pulsar.ClientOptions) {
				mu.Lock()
				configured = append(configured, cluster)
				labels[cluster] = o.CustomMetricsLabels
				mu.Unlock()
				o.MetricsRegisterer = reg
			}))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close, context.Background())
		Expect(configured).To(ConsistOf(p.Clusters()), "ConfigureClient is called once for each cluster")
		for c, l := range labels {
			Expect(l).To(HaveKeyWithValue("cluster", c))
		}

		// A different number of messages to each cluster (10 to the first,
		// 20 to the second, ...), some sync, some async, so that series
		// mixed up between clusters would show.
		want := map[string]float64{}
		target := map[string]float64{}
		for i, c := range p.Clusters() {
			target[c] = float64(10 * (i + 1))
		}
		var failed []error
		for i := 0; !equalCounts(want, target); i++ {
			key := fmt.Sprintf("metrics-%d", i)
			c, _ := p.Placement(key)
			if want[c] == target[c] {
				continue
			}
			want[c]++
			if i%2 == 0 {
				_, err := p.Send(ctx, msg(key, "sync"))
				Expect(err).NotTo(HaveOccurred())
				continue
			}
			p.SendAsync(ctx, msg(key, "async"), func(_ producer.ID, _ *producer.Message, err error) {
				if err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			})
		}
		Expect(p.Flush(ctx)).To(Succeed())
		Expect(failed).To(BeEmpty())

		families, err := reg.Gather()
		Expect(err).NotTo(HaveOccurred())
		published := byCluster(families, "pulsar_client_messages_published")
		GinkgoWriter.Printf("pulsar_client_messages_published by cluster: %v\n", published)
		Expect(published).To(Equal(want), "one series per cluster, each counting that cluster's acknowledged messages")
		for _, c := range p.Clusters() {
			Expect(published[c]).To(BeNumerically(">", 0), c)
		}
		bytes := byCluster(families, "pulsar_client_bytes_published")
		Expect(bytes).To(HaveLen(len(target)))
		for c, n := range bytes {
			Expect(n).To(BeNumerically(">", 0), c)
		}
		opened := byCluster(families, "pulsar_client_producers_opened")
		GinkgoWriter.Printf("pulsar_client_producers_opened by cluster: %v\n", opened)
		for i, c := range p.Clusters() {
			Expect(opened).To(HaveKeyWithValue(c, float64(p.Partitions()[i])), "one producer per partition of %s", c)
		}
	})
})

func equalCounts(a, b map[string]float64) bool {
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
