// Package consume reads back everything the e2e suites wrote, with plain
// pulsar-client-go consumers: one per cluster, so that what arrives can be
// checked against what the SDK acknowledged and where the router put it.
package consume

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/keyroute/keyroute/e2e/internal/standalone"
	"github.com/keyroute/keyroute/internal/testbed"
)

// Received is one consumed message.
type Received struct {
	Cluster string
	// Partition is the partition index, from the "-partition-N" topic name
	// (-1 for a non-partitioned topic).
	Partition int
	Key       string
	Payload   string
}

// All subscribes to topic with subscription sub (Exclusive, from the
// earliest message) on every cluster and reads until want messages have
// arrived and then nothing more for quiet, so that duplicates beyond want
// are seen too; or until ctx ends. The messages of one cluster keep their
// arrival order in the result.
func All(ctx context.Context, clusters []*testbed.Cluster, topic, sub string, want int, quiet time.Duration) ([]Received, error) {
	return Until(ctx, clusters, topic, sub, func(got []Received) bool { return len(got) >= want }, quiet)
}

// Until is All with the end told by enough instead of a count: each
// cluster's reader stops once enough holds for everything read so far and
// nothing more came for quiet. It suits topics that hold messages beyond
// those counted, such as the outputs of aborted transactions that
// pulsar-client-go still delivers (apache/pulsar-client-go#1498).
func Until(ctx context.Context, clusters []*testbed.Cluster, topic, sub string, enough func([]Received) bool, quiet time.Duration) ([]Received, error) {
	var (
		mu  sync.Mutex
		out []Received
		wg  sync.WaitGroup
	)
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return enough(out)
	}
	for _, c := range clusters {
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, Logger: plog.DefaultNopLogger()})
		if err != nil {
			return nil, fmt.Errorf("consume: %s: %w", c.Name, err)
		}
		defer client.Close()
		var cons pulsar.Consumer
		err = standalone.Retry(ctx, func() (err error) { // a restarted cluster may still flap
			cons, err = client.Subscribe(pulsar.ConsumerOptions{
				Topic: topic, SubscriptionName: sub, Type: pulsar.Exclusive,
				SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
				ReceiverQueueSize:           5000,
			})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("consume: %s: subscribe: %w", c.Name, err)
		}
		defer cons.Close()
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			for {
				rctx, cancel := context.WithTimeout(ctx, quiet)
				m, err := cons.Receive(rctx)
				cancel()
				if err != nil {
					if ctx.Err() != nil || done() {
						return
					}
					continue // not enough yet: keep waiting
				}
				cons.AckID(m.ID())
				mu.Lock()
				out = append(out, Received{Cluster: name, Partition: partitionOf(m.Topic()), Key: m.Key(), Payload: string(m.Payload())})
				mu.Unlock()
			}
		}(c.Name)
	}
	wg.Wait()
	return out, ctx.Err()
}

// partitionOf returns N of a "...-partition-N" topic name, or -1.
func partitionOf(topic string) int {
	i := strings.LastIndex(topic, "-partition-")
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(topic[i+len("-partition-"):])
	if err != nil {
		return -1
	}
	return n
}
