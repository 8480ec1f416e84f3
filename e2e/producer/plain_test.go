//go:build e2e

package producer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
)

// Helpers for the specs that read back with plain pulsar-client-go what
// the SDK (or a plain producer) wrote, and that look at the broker's copy.

// tapped is one message a tap read, with the cluster it came from.
type tapped struct {
	cluster string
	msg     pulsar.Message
}

// tap is a subscription on a topic on every cluster, made before anything
// is produced and read from the earliest message with plain
// pulsar-client-go consumers. Their pulsar-client-go log (warnings and
// errors) is kept, so that a spec can see what the consumer discarded.
type tap struct {
	ch   chan tapped
	logs *syncBuffer
}

// newTap subscribes sub to topic on each of clusters (every bed cluster
// when none are given); the consumers close when the spec ends.
func newTap(ctx context.Context, topic, sub string, clusters ...*testbed.Cluster) *tap {
	if len(clusters) == 0 {
		clusters = bed.Clusters()
	}
	t := &tap{ch: make(chan tapped), logs: new(syncBuffer)}
	logger := plog.NewLoggerWithSlog(slog.New(slog.NewTextHandler(t.logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	rctx, stop := context.WithCancel(context.Background())
	var (
		wg      sync.WaitGroup
		closers []func()
	)
	DeferCleanup(func() {
		stop()
		wg.Wait()
		for i := len(closers) - 1; i >= 0; i-- { // consumers before their clients
			closers[i]()
		}
	})
	for _, c := range clusters {
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, Logger: logger})
		Expect(err).NotTo(HaveOccurred(), c.Name)
		closers = append(closers, client.Close)
		cons, err := client.Subscribe(pulsar.ConsumerOptions{
			Topic: topic, SubscriptionName: sub, Type: pulsar.Exclusive,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		})
		Expect(err).NotTo(HaveOccurred(), c.Name)
		closers = append(closers, cons.Close)
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			for {
				m, err := cons.Receive(rctx)
				if err != nil {
					return // the spec ended
				}
				_ = cons.Ack(m)
				select {
				case t.ch <- tapped{cluster: name, msg: m}:
				case <-rctx.Done():
					return
				}
			}
		}(c.Name)
	}
	return t
}

// until reads until stop says the messages read so far are enough; the
// spec fails if ctx ends first.
func (t *tap) until(ctx context.Context, what string, stop func(got []tapped) bool) []tapped {
	GinkgoHelper()
	var got []tapped
	for !stop(got) {
		select {
		case m := <-t.ch:
			got = append(got, m)
		case <-ctx.Done():
			Fail(fmt.Sprintf("%s: the ctx ended after %d messages: %v", what, len(got), ctx.Err()))
		}
	}
	return got
}

// untilTrailers reads until a message with payload trailer has arrived for
// every key of keys, and returns, by key, the messages before it. A key's
// messages share a partition and arrive in order, so what a key's trailer
// did not follow never arrived, without waiting for a quiet period.
func (t *tap) untilTrailers(ctx context.Context, trailer string, keys []string) map[string][]pulsar.Message {
	GinkgoHelper()
	before := map[string][]pulsar.Message{}
	ended := map[string]bool{}
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	t.until(ctx, "reading up to every key's trailer", func(got []tapped) bool {
		if len(got) > 0 {
			m := got[len(got)-1].msg
			k := m.Key()
			Expect(want[k]).To(BeTrue(), "a message with the unexpected key %q", k)
			Expect(ended[k]).To(BeFalse(), "key %q: a message after its trailer", k)
			if string(m.Payload()) == trailer {
				ended[k] = true
			} else {
				before[k] = append(before[k], m)
			}
		}
		return len(ended) == len(want)
	})
	return before
}

// discards counts the messages the tap's consumers logged as discarded.
func (t *tap) discards() int {
	return strings.Count(t.logs.String(), "Discarding corrupted message")
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// plainClient returns a quiet pulsar-client-go client for a bed cluster,
// closed when the spec ends.
func plainClient(c *testbed.Cluster) pulsar.Client {
	GinkgoHelper()
	client, err := bedsuite.Client(c.ServiceURL, false)
	Expect(err).NotTo(HaveOccurred(), c.Name)
	DeferCleanup(client.Close)
	return client
}

// stored is the broker's copy of one entry, as its admin API returns it
// (GET .../ledger/{ledger}/entry/{entry}): the payload (of a batch, the
// whole batch; of a compressed entry, uncompressed) and the X-Pulsar-*
// headers that describe its metadata.
type stored struct {
	body   []byte
	header http.Header
}

// storedEntry reads an entry of partition part of topic on cluster c.
func storedEntry(ctx context.Context, c *testbed.Cluster, topic string, part int, id pulsar.MessageID) stored {
	GinkgoHelper()
	local := strings.TrimPrefix(topic, "persistent://")
	url := fmt.Sprintf("%s/admin/v2/persistent/%s-partition-%d/ledger/%d/entry/%d", c.AdminURL, local, part, id.LedgerID(), id.EntryID())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := bed.HTTPClient().Do(req)
	Expect(err).NotTo(HaveOccurred(), url)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred(), url)
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s: %s", url, body)
	return stored{body: body, header: resp.Header}
}

// clusterNamed returns the bed cluster called name.
func clusterNamed(name string) *testbed.Cluster {
	GinkgoHelper()
	c := bed.Cluster(name)
	Expect(c).NotTo(BeNil(), "no bed cluster %q", name)
	return c
}

// goid returns the id of the calling goroutine, from the first line of its
// stack ("goroutine 42 [running]:").
func goid() uint64 {
	var buf [32]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	var id uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			break
		}
		id = id*10 + uint64(ch-'0')
	}
	return id
}
