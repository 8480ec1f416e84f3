//go:build e2e

package parity

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/keyroute/keyroute/internal/testbed"
)

// Reading back with plain pulsar-client-go.

// plainClient returns a pulsar-client-go client for c whose warnings and
// errors go to logs (discarded when nil); it is closed when the spec ends.
func plainClient(c *testbed.Cluster, logs *gbytes.Buffer) pulsar.Client {
	GinkgoHelper()
	logger := plog.DefaultNopLogger()
	if logs != nil {
		logger = plog.NewLoggerWithSlog(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, Logger: logger})
	Expect(err).NotTo(HaveOccurred(), c.Name)
	DeferCleanup(client.Close)
	return client
}

// plainSub is a plain pulsar-client-go consumer on one cluster and what it
// has read so far, partition by partition.
type plainSub struct {
	cluster string
	cons    pulsar.Consumer
	at      map[string][2]int64 // partition topic -> last whole entry read (ledger, entry)
}

// subscribe subscribes on c with o (Exclusive from the earliest message
// unless o says otherwise); the consumer is closed when the spec ends.
func subscribe(c *testbed.Cluster, client pulsar.Client, o pulsar.ConsumerOptions) *plainSub {
	GinkgoHelper()
	if o.SubscriptionName == "" {
		o.SubscriptionName = "verify"
	}
	o.SubscriptionInitialPosition = pulsar.SubscriptionPositionEarliest
	cons, err := client.Subscribe(o)
	Expect(err).NotTo(HaveOccurred(), c.Name)
	DeferCleanup(cons.Close)
	return &plainSub{cluster: c.Name, cons: cons, at: map[string][2]int64{}}
}

// drain reads until it has read, on every partition, the last entry the
// topic held when it was called, and returns what it read in arrival
// order (acknowledged). The spec fails if ctx ends first. It is for
// subscriptions that are handed every stored message (not delayed, not
// failing to decrypt).
func (s *plainSub) drain(ctx context.Context) []pulsar.Message {
	GinkgoHelper()
	last, err := s.cons.GetLastMessageIDs()
	Expect(err).NotTo(HaveOccurred(), s.cluster)
	want := map[string][2]int64{}
	for _, l := range last {
		if l.EntryID() >= 0 {
			want[l.Topic()] = [2]int64{l.LedgerID(), l.EntryID()}
		}
	}
	behind := func() int {
		n := 0
		for t, w := range want {
			if at, ok := s.at[t]; !ok || at[0] < w[0] || at[0] == w[0] && at[1] < w[1] {
				n++
			}
		}
		return n
	}
	var got []pulsar.Message
	for behind() > 0 {
		m, err := s.cons.Receive(ctx)
		Expect(err).NotTo(HaveOccurred(), "%s: %d partitions not read to their end after %d messages", s.cluster, behind(), len(got))
		Expect(s.cons.Ack(m)).To(Succeed())
		got = append(got, m)
		id := m.ID()
		if id.BatchSize() <= 1 || id.BatchIdx() == id.BatchSize()-1 {
			s.at[m.Topic()] = [2]int64{id.LedgerID(), id.EntryID()}
		}
	}
	return got
}

// drainAll subscribes on every cluster with o and drains each; the
// messages are returned by cluster name.
func drainAll(ctx context.Context, topic string, o pulsar.ConsumerOptions) map[string][]pulsar.Message {
	GinkgoHelper()
	o.Topic = topic
	out := map[string][]pulsar.Message{}
	for _, c := range bed.Clusters() {
		out[c.Name] = subscribe(c, plainClient(c, nil), o).drain(ctx)
	}
	return out
}

// partitionOf returns N of a "...-partition-N" topic name.
func partitionOf(topic string) int {
	GinkgoHelper()
	i := strings.LastIndex(topic, "-partition-")
	Expect(i).To(BeNumerically(">=", 0), topic)
	n, err := strconv.Atoi(topic[i+len("-partition-"):])
	Expect(err).NotTo(HaveOccurred(), topic)
	return n
}

// byKey indexes messages by key; a key seen twice fails the spec.
func byKey(msgs map[string][]pulsar.Message) map[string]pulsar.Message {
	GinkgoHelper()
	out := map[string]pulsar.Message{}
	for cluster, ms := range msgs {
		for _, m := range ms {
			Expect(out).NotTo(HaveKey(m.Key()), "key %q read twice (again on %s)", m.Key(), cluster)
			out[m.Key()] = m
		}
	}
	return out
}

// idString prints a message id as ledger:entry:batch.
func idString(id pulsar.MessageID) string {
	return fmt.Sprintf("%d:%d:%d", id.LedgerID(), id.EntryID(), id.BatchIdx())
}
