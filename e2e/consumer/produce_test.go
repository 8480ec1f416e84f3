//go:build e2e

package consumer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

// payload is the value of key's message number seq: "key|seq".
func payload(key string, seq int) string { return key + "|" + strconv.Itoa(seq) }

// parsePayload splits a payload into its key and sequence number.
func parsePayload(p string) (key string, seq int, err error) {
	k, s, ok := strings.Cut(p, "|")
	if !ok {
		return "", 0, fmt.Errorf("payload %q is not key|seq", p)
	}
	seq, err = strconv.Atoi(s)
	return k, seq, err
}

// keys returns n keys with the given prefix.
func keys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return out
}

// written is what the producer acknowledged: payload -> where it was
// written.
type written map[string]producer.ID

// produce sends, through p, messages seq = from .. from+perKey-1 of every
// key, round after round over the keys (so that a key's messages are
// spread over many batches), with SendAsync from this goroutine only (the
// producer keeps a key's messages in that order), then Flushes. Every
// message must be acknowledged: the clusters are healthy. It prints the
// producer's rate.
func produce(ctx context.Context, p *producer.Producer, ks []string, from, perKey int) written {
	GinkgoHelper()
	var (
		mu     sync.Mutex
		out    = make(written, len(ks)*perKey)
		failed = map[string]error{}
	)
	start := time.Now()
	for seq := from; seq < from+perKey; seq++ {
		for _, k := range ks {
			v := payload(k, seq)
			p.SendAsync(ctx, &producer.Message{Key: k, Value: []byte(v)}, func(id producer.ID, _ *producer.Message, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed[v] = err
					return
				}
				out[v] = id
			})
		}
	}
	Expect(p.Flush(ctx)).To(Succeed())
	elapsed := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	Expect(failed).To(BeEmpty(), "messages the producer failed on healthy clusters")
	Expect(out).To(HaveLen(len(ks)*perKey), "every message has its outcome after Flush")
	GinkgoWriter.Printf("produced %d messages over %d keys in %s (%.0f msg/s)\n",
		len(out), len(ks), elapsed.Round(time.Millisecond), float64(len(out))/elapsed.Seconds())
	return out
}

// openProducer opens a keyroute producer on topic over the bed's
// clusters, closed when the spec ends. The producer only writes the
// specs' input, to healthy clusters: it counts a cluster down only after
// a whole send timeout without an acknowledgement (when its messages
// would fail anyway), not after the default DownAfter of 3 s, which a
// JVM of five on two busy cores can stall for (its FailFast refusals
// failed a run).
func openProducer(ctx context.Context, topic string, opts ...producer.Opt) *producer.Producer {
	GinkgoHelper()
	base := []producer.Opt{producer.Topic(topic), producer.DownAfter(producer.DefaultSendTimeout)}
	p, err := producer.New(ctx, topo(), append(base, opts...)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(p.Close(context.Background())).To(Succeed()) })
	return p
}
