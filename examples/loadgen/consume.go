package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/topology"
)

// consumeDrainQuiet ends the wait for the last messages once nothing has
// arrived for this long (the rest is reported missing).
const consumeDrainQuiet = 15 * time.Second

var consumerTypes = map[string]consumer.SubscriptionType{
	"failover":   consumer.Failover,
	"exclusive":  consumer.Exclusive,
	"shared":     consumer.Shared,
	"key_shared": consumer.KeyShared,
}

// consumers is the consume side of a run: subscriptions x consumers per
// subscription on every topic, each keyroute consumer read by one
// goroutine that records every message's end-to-end latency and
// acknowledges it.
type consumers struct {
	list   []*consumer.Consumer
	cancel context.CancelFunc
	wg     sync.WaitGroup // the receive loops
}

// randomSuffix is OMB's RandomGenerator.getRandomString: 5 random bytes in
// unpadded base64url, so that every run gets fresh topics and
// subscriptions.
func randomSuffix() string {
	var b [5]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// startConsumers subscribes cfg.subscriptions x cfg.consumers consumers on
// each topic (subscriptions named as OMB names them, "sub-000-<random>"),
// from the earliest message, through the shared clients cs, and starts
// their receive loops. It closes what it opened when one fails.
func startConsumers(ctx context.Context, cfg *config, cs *keyroute.Clients, topo *topology.Topology,
	topics []string, rec *recorder, pay *payloads) (*consumers, error) {
	type spec struct{ topic, sub string }
	var specs []spec
	for _, t := range topics {
		for s := range cfg.subscriptions {
			sub := fmt.Sprintf("sub-%03d-%s", s, randomSuffix())
			for range cfg.consumers {
				specs = append(specs, spec{t, sub})
			}
		}
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	list := make([]*consumer.Consumer, len(specs))
	errs := make([]error, len(specs))
	forEach(len(specs), 8, func(i int) {
		sp := specs[i]
		list[i], errs[i] = consumer.New(cctx, topo, consumer.Topic(sp.topic), consumer.Subscription(sp.sub),
			consumer.Type(consumerTypes[cfg.subType]), consumer.InitialPosition(consumer.Earliest),
			consumer.WithClients(cs))
	})
	if err := errors.Join(errs...); err != nil {
		for _, c := range list {
			if c != nil {
				_ = c.Close(context.Background())
			}
		}
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	cs2 := &consumers{list: list, cancel: rcancel}
	for _, c := range list {
		cs2.wg.Add(1)
		go func() {
			defer cs2.wg.Done()
			receiveLoop(rctx, c, rec, pay.stamp)
		}()
	}
	return cs2, nil
}

// receiveLoop takes messages from c until ctx ends, recording each one's
// end-to-end latency (from the send time stamped in the payload, else from
// the broker's publish time, in milliseconds) and acknowledging it.
func receiveLoop(ctx context.Context, c *consumer.Consumer, rec *recorder, stamped bool) {
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			return
		}
		sent := m.PublishTime
		if stamped {
			if t, ok := sentAt(m.Value); ok {
				sent = t
			}
		}
		if i, ok := rec.index[m.ID.Cluster]; ok {
			rec.received(i, time.Since(sent).Nanoseconds())
		}
		_ = c.Ack(ctx, m) // grouped: returns at once; failures show as missing or redelivered messages
	}
}

// drain waits until every acknowledged message has been received by every
// subscription, nothing has arrived for consumeDrainQuiet, or ctx ends;
// then it stops the receive loops, counts redeliveries and closes the
// consumers.
func (cs *consumers) drain(ctx context.Context, rec *recorder, log io.Writer) (redelivered int64) {
	t0 := time.Now()
	last, lastAt := int64(-1), time.Now()
	for {
		recv, acked := rec.receivedTotal()
		want := int64(rec.subscriptions) * acked
		if recv >= want {
			break
		}
		if recv != last {
			last, lastAt = recv, time.Now()
		}
		if time.Since(lastAt) > consumeDrainQuiet || ctx.Err() != nil {
			fmt.Fprintf(log, "loadgen: consumers stopped waiting with %s of %s messages received\n", commas(recv), commas(want))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cs.cancel()
	cs.wg.Wait()
	hctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range cs.list {
		for _, h := range c.Health(hctx) {
			redelivered += int64(h.Redelivered)
		}
	}
	cs.close()
	fmt.Fprintf(log, "loadgen: consumers drained and closed in %s\n", time.Since(t0).Round(time.Millisecond))
	return redelivered
}

// close stops the receive loops and closes every consumer.
func (cs *consumers) close() {
	cs.cancel()
	cs.wg.Wait()
	var wg sync.WaitGroup
	for _, c := range cs.list {
		wg.Add(1)
		go func() { defer wg.Done(); _ = c.Close(context.Background()) }()
	}
	wg.Wait()
}
