//go:build e2e

package producer

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

var _ = Describe("odd input on real clusters", func() {
	It("writes non-UTF-8, multibyte and 64 KiB keys and nil payloads byte for byte, where router says", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		topic := newTopic(ctx, "input")
		p, err := producer.New(ctx, bed.Topology(), producer.Topic(topic))
		Expect(err).NotTo(HaveOccurred())
		defer p.Close(ctx)
		keys := []string{"\xff\xfe\x00binary", "ключ-日本", strings.Repeat("k", 64<<10)}
		for _, key := range keys {
			id, err := p.Send(ctx, &producer.Message{Key: key}) // nil Value
			Expect(err).NotTo(HaveOccurred())
			c, part := p.Placement(key)
			Expect(id.Cluster).To(Equal(c))
			Expect(id.Partition).To(Equal(part))

			url := ""
			for _, cl := range bed.Clusters() {
				if cl.Name == c {
					url = cl.ServiceURL
				}
			}
			client, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: plog.DefaultNopLogger()})
			Expect(err).NotTo(HaveOccurred())
			r, err := client.CreateReader(pulsar.ReaderOptions{
				Topic:          topic + "-partition-" + strconv.Itoa(part),
				StartMessageID: id.MessageID, StartMessageIDInclusive: true,
			})
			Expect(err).NotTo(HaveOccurred())
			m, err := r.Next(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(m.Key()).To(Equal(key))
			Expect(m.Payload()).To(BeEmpty())
			r.Close()
			client.Close()
		}
	})
})
