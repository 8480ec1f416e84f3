package consumer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/router"
)

// Retry topics (the Retry option, ReconsumeLater), and what this file
// knows of pulsar-client-go v0.21.0's (consumer_impl.go,
// consumer_multitopic.go, retry_router.go, dlq_router.go):
//
//   - With RetryEnable, Subscribe returns one consumer over the topic and
//     the retry topic. A message's ID then belongs to the partition
//     consumer of its own topic: a retried message's PartitionIdx is the
//     retry topic's partition, unrelated to the topic's partition of the
//     same index, so the hand-over must keep it off the frontiers
//     (Consumer.admit lets it pass: see retried).
//   - ReconsumeLater copies the message's key, ordering key, value, event
//     time and properties (keyroute's hand-over tag among them), sets
//     RECONSUMETIMES (1 on the first call, one more on each), DELAY_TIME
//     and, on the first, REAL_TOPIC and ORIGIN_MESSAGE_ID, and hands it
//     over an unbuffered channel to a router goroutine, which writes it to
//     the retry topic (DeliverAfter the delay) or, once RECONSUMETIMES
//     exceeds DLQPolicy.MaxDeliveries, to the dead-letter topic, then
//     acknowledges the original (a failed write nacks it). It returns
//     nothing: a message it cannot place is logged and dropped from the
//     call, and stays unacknowledged.
//   - The router stops when the consumer closes; a ReconsumeLater after
//     that waits for ever on the channel. So a call counts itself in its
//     cluster's retryGate, from before it checks that the subscription is
//     still open until pulsar-client-go has taken the message, and
//     (*cluster).close waits for the calls counted before it closes the
//     subscription.
//   - The router opens its producer on the first message, retrying with
//     context.Background() until it is made: one attempt takes up to the
//     operation timeout; a producer the broker refuses (the retry topic
//     deleted with auto-creation off, no permission to produce, the
//     topic's producer limit) keeps the router in that loop for ever, and
//     every later call waits on the channel. So
//     close waits for the calls counted at most the cluster's operation
//     timeout (one attempt), then closes the subscription: nothing of
//     keyroute waits on such a call, not even Close, and no lock is held
//     across it. A call left behind is pulsar-client-go's, as is its
//     router goroutine: both end if the producer is made at last (the
//     message is then written, or the call waits on the stopped router
//     for ever).
//
// The e2e suite e2e/consumerparity (its retry spec) checks these on real
// clusters, so that a change of the pinned version that breaks them
// fails there.

// reconsumer is the part of a pulsar-client-go consumer that sends a
// message to the retry topic (a test's stand-in stream may lack it).
type reconsumer interface {
	ReconsumeLaterWithCustomProperties(msg pulsar.Message, props map[string]string, delay time.Duration)
}

const opReconsume = "reconsume later"

// ReconsumeLater sends m to the retry topic of its cluster (see Retry), to
// be delivered again after delay (at once for a delay <= 0), with props
// added to its properties (nil: none), and acknowledges it on the
// subscription once it is written there: pulsar-client-go's
// ReconsumeLaterWithCustomProperties. Once m has been reconsumed
// MaxReconsumes times, ReconsumeLater sends it to its cluster's
// dead-letter topic instead.
//
// What comes back is a new message, read from the retry topic of the same
// cluster: Key, OrderingKey, Value, EventTime and Properties are m's, plus
// props and pulsar-client-go's RECONSUMETIMES (see Reconsumes),
// DELAY_TIME, REAL_TOPIC and ORIGIN_MESSAGE_ID; its ID names the cluster
// and the retry topic's partition, and Raw().Topic() the retry topic. It
// has no order with the key's other messages. Acknowledge it (Ack, Nack,
// ReconsumeLater) as any other: the acknowledgement goes to the retry
// topic. AckCumulative of a retried message acknowledges the retry
// topic's messages up to it, never the topic's, and AckCumulative of the
// topic's messages never acknowledges the retry topic's.
//
// pulsar-client-go writes in the background: ReconsumeLater returns once
// m's cluster's consumer has taken m. A write that fails nacks m (it
// comes again after NackRedeliveryDelay). The acknowledgement that
// follows the write can be lost, as any (the Consumer closed first, a
// broker restart): m then comes again from the topic as well as from the
// retry topic. Pulsar delivers at least once. A message of a
// subscription replaced since (a reconnect) goes through the cluster's
// current subscription, as its Ack does. The Observer does not see
// ReconsumeLater, nor the acknowledgement pulsar-client-go sends.
//
// ctx bounds the wait for m's cluster's consumer to take m, which is at
// once but while pulsar-client-go opens a producer of the retry topic on
// the cluster, after the first ReconsumeLater of a subscription: it
// tries until the producer is made, for ever when the broker refuses it
// (no permission to produce, say). When ctx ends first, ReconsumeLater returns an error
// matching ctx.Err(), and m is handed over if the producer is made. A
// reconnect, a drain's end, a growth's new subscription and Close wait
// for such a hand-over at most the cluster's operation timeout, then
// close the subscription without it (the Logger says so): m, not
// acknowledged, then comes again.
//
// Errors: ErrNilMessage for nil or a Message without Raw; ErrNoRetry
// without the Retry option; ErrReservedProperty for a name of props that
// begins with "keyroute-"; otherwise a *ClusterError naming m's cluster,
// as Ack's (ErrClosed, ErrUnknownCluster, ...), with errors.ErrUnsupported
// for a cluster whose consumer cannot reconsume (the fakes of package
// consumertest).
func (c *Consumer) ReconsumeLater(ctx context.Context, m *Message, delay time.Duration, props map[string]string) error {
	if m == nil || m.raw == nil {
		return ErrNilMessage
	}
	if c == nil {
		return ErrClosed
	}
	if c.cfg.retry == nil {
		return ErrNoRetry
	}
	if c.subs != nil {
		s, err := c.subOf(m, "reconsume")
		if err != nil {
			return err
		}
		return s.ReconsumeLater(ctx, m, delay, props)
	}
	if len(props) != 0 {
		if name, reserved := router.ReservedProperty(props); reserved {
			return fmt.Errorf("%w: %q (names beginning with %q)", ErrReservedProperty, name, router.PropPrefix)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	k, r, err := c.lockFrom(m)
	if err != nil {
		return err
	}
	if ctx.Done() == nil { // nothing to give up for: on this goroutine
		r.ReconsumeLaterWithCustomProperties(m.raw, props, delay)
		k.retries.leave()
		return nil
	}
	done := make(chan struct{})
	go func() { // k's close waits for it, within its bound
		r.ReconsumeLaterWithCustomProperties(m.raw, props, delay)
		k.retries.leave()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return clusterErr(k.name, opReconsume, ctx.Err())
	}
}

// lockFrom returns the cluster whose subscription takes m (see from), and
// its consumer, with the call counted in the cluster's retries: the
// subscription is not closed before the caller leaves, or before close's
// bound.
func (c *Consumer) lockFrom(m *Message) (*cluster, reconsumer, error) {
	for {
		k, err := c.from(m, opReconsume)
		if err != nil {
			return nil, nil, err
		}
		r, ok := k.link.streams[0].(reconsumer) // a Retry subscription is one stream (see link.whole)
		if !ok {
			return nil, nil, clusterErr(k.name, opReconsume, errors.ErrUnsupported)
		}
		if k.retries.enter(&k.gone) {
			return k, r, nil
		}
		// It left the read set since from looked (a reconnect, a drain's
		// end, Close): the set without it is published right after, and
		// from finds the next subscription, or the Consumer closed.
		runtime.Gosched()
	}
}

// retryGate counts a subscription's ReconsumeLater calls that are handing
// a message to its pulsar-client-go consumer, so that the subscription is
// not closed under them (see the top of this file).
type retryGate struct {
	mu   sync.Mutex    // guards the fields below
	n    int           // calls in flight
	idle chan struct{} // when set, closed as n drops to 0 (a close waits on it)
}

// enter counts a call unless gone is set; gone is set under mu by shut,
// so a call counted is one that shut waits for.
func (g *retryGate) enter(gone *atomic.Bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gone.Load() {
		return false
	}
	g.n++
	return true
}

// leave ends a call that enter counted.
func (g *retryGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// shutRetries sets k gone, then waits for the calls counted, at most k's
// operation timeout: one attempt of pulsar-client-go's router to open
// its retry producer. Calls still in flight then are left to
// pulsar-client-go, and logged.
func (k *cluster) shutRetries() {
	g := &k.retries
	g.mu.Lock()
	k.gone.Store(true)
	if g.n == 0 {
		g.mu.Unlock()
		return
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	bound := operationTimeout(k.member)
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-idle:
		return
	case <-t.C:
	}
	g.mu.Lock()
	n := g.n
	g.mu.Unlock()
	if n > 0 {
		k.owner.log().Warn("keyroute: closing a subscription with ReconsumeLater calls that pulsar-client-go's retry router has not taken (it cannot open the retry topic's producer); their messages come again",
			"cluster", k.name, "calls", n, "waited", bound.String())
	}
}

// Reconsumes returns how many times ReconsumeLater has sent m to a retry
// topic: pulsar-client-go's RECONSUMETIMES property, 0 for a message read
// from the topic itself.
func (m *Message) Reconsumes() int {
	n, _ := strconv.Atoi(m.Properties[pulsar.SysPropertyReconsumeTimes])
	return n
}

// retried reports whether a message with properties props was read from
// the retry topic: it passes the hand-over (Consumer.admit) without
// touching any frontier.
func (c *Consumer) retried(props map[string]string) bool {
	if c.cfg.retry == nil {
		return false
	}
	_, ok := props[pulsar.SysPropertyReconsumeTimes]
	return ok
}

// retryTopic returns the retry topic's name.
func (c *cfg) retryTopic() string {
	if c.retry.Topic != "" {
		return c.retry.Topic
	}
	return RetryTopic(c.topic, c.subscription)
}

// deadLetterTopic returns the dead-letter topic's name.
func (c *cfg) deadLetterTopic() string {
	if c.deadLetter != nil && c.deadLetter.Topic != "" {
		return c.deadLetter.Topic
	}
	return DeadLetterTopic(c.topic, c.subscription)
}

func (c *cfg) validateRetry() error {
	r := c.retry
	if r == nil {
		return nil
	}
	switch {
	case r.MaxReconsumes < 1 || uint64(r.MaxReconsumes) > math.MaxUint32:
		return badOption("Retry", r.MaxReconsumes, "MaxReconsumes must be between 1 and 2^32-1")
	case c.deadLetter != nil && c.deadLetter.MaxDeliveries != r.MaxReconsumes:
		return fmt.Errorf("%w: Retry(MaxReconsumes %d) and DeadLetter(MaxDeliveries %d) differ: pulsar-client-go counts both against one number, make them equal",
			ErrBadOption, r.MaxReconsumes, c.deadLetter.MaxDeliveries)
	case c.retryTopic() == c.topic:
		return badOption("Retry", c.retryTopic(), "the retry topic is the topic itself")
	case c.retryTopic() == c.deadLetterTopic():
		return badOption("Retry", c.retryTopic(), "the retry topic is the dead-letter topic")
	}
	return nil
}

// retryOptions sets o (DeadLetter's policy already in it, if any) to read
// and write the retry topic.
func retryOptions(o *pulsar.ConsumerOptions, c cfg) {
	o.RetryEnable = true
	if o.DLQ == nil {
		o.DLQ = &pulsar.DLQPolicy{MaxDeliveries: uint32(c.retry.MaxReconsumes), DeadLetterTopic: c.deadLetterTopic()}
	}
	o.DLQ.RetryLetterTopic = c.retryTopic()
}
