package consumer

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/apache/pulsar-client-go/pulsar"
)

// The read path. There is no goroutine between pulsar-client-go and the
// caller: Receive and ReceiveBatch take messages straight from the
// channels of the parts (a pulsar-client-go consumer per partition of
// each cluster, each channel one partition's messages in order), trying
// the parts in rotation and waiting on all of them at once only when all
// are empty. So a message costs one channel receive that does not park
// while messages are there, and a partition or cluster that is silent or
// unreachable holds nobody up: its channel is simply empty. Each
// partition has a channel of its own so that one can be left unread
// (not polled, not waited on) without stalling the others.
//
// The hand-over of moving keys holds a moved key's messages here (see
// hold.go): between the take from a part's channel (poll, wait) and the
// hand-over to the caller (fill), admit lets a message through or the
// holder takes it (a marker, a held message), and take serves released
// messages before the clusters' channels.

// Receive returns the next message of the merged stream. It blocks until
// one comes, ctx ends (the error matches ctx.Err()) or the Consumer is
// closed (ErrClosed). The Message shares one allocation with up to
// slabSize-1 others that Receive returned before or after it: keep what
// you need of it, not the Message, when you keep it for long.
func (c *Consumer) Receive(ctx context.Context) (*Message, error) {
	if c == nil {
		return nil, ErrClosed
	}
	if c.subs != nil {
		return c.receiveTopics(ctx)
	}
	for {
		p, err := c.enter(ctx)
		if err != nil {
			return nil, err
		}
		cm, pt, err := c.first(ctx, p)
		c.gate.RUnlock()
		if err == errSeekBegun {
			continue
		}
		if err != nil {
			return nil, err
		}
		m := c.carve()
		m.fill(cm.Message, pt)
		c.delivered(pt.k, m)
		return m, nil
	}
}

// ReceiveBatch returns the messages the clusters hold when it is called,
// at most max, in one slice carved from one allocation (acknowledge one
// with Ack(ctx, &ms[i])). It waits, as Receive does, only while there is
// none; messages that come while it takes are left for the next call.
// The clusters take turns message by message, and each partition's
// messages keep their order within the batch and from one batch to the
// next. ReceiveInto costs less: it allocates nothing. It returns ErrBadMax
// for max < 1.
func (c *Consumer) ReceiveBatch(ctx context.Context, max int) ([]Message, error) {
	if max < 1 {
		return nil, fmt.Errorf("%w: ReceiveBatch(%d)", ErrBadMax, max)
	}
	if c != nil && c.subs != nil {
		ms, _, err := c.receiveIntoTopics(ctx, nil, max)
		return ms, err
	}
	var ms []Message
	n, err := c.receiveBatch(ctx, func(held int) []Message {
		ms = make([]Message, min(held, max))
		return ms
	})
	// The clusters may hold fewer than counted by the time they are
	// polled (another Receive took some): only ms[:n] are messages.
	return ms[:n], err
}

// ReceiveInto is ReceiveBatch into buf, which the caller owns and may use
// again: it fills buf[:n] with up to len(buf) messages the clusters hold
// when it is called (waiting only while there is none) and returns n. It
// allocates nothing. A Message in buf is overwritten by the next
// ReceiveInto into it: acknowledge or nack it first (Ack and Nack read it
// only during the call), and copy what you keep. It returns ErrBadMax for
// an empty buf.
func (c *Consumer) ReceiveInto(ctx context.Context, buf []Message) (int, error) {
	if len(buf) == 0 {
		return 0, fmt.Errorf("%w: ReceiveInto with an empty buffer", ErrBadMax)
	}
	if c != nil && c.subs != nil {
		_, n, err := c.receiveIntoTopics(ctx, buf, len(buf))
		return n, err
	}
	return c.receiveBatch(ctx, func(held int) []Message { return buf[:min(held, len(buf))] })
}

// receiveBatch waits for a message, then fills the slice room returns for
// the number of messages the clusters hold (at least 1), the clusters
// taking turns, and returns how many it filled (at least one).
func (c *Consumer) receiveBatch(ctx context.Context, room func(held int) []Message) (int, error) {
	if c == nil {
		return 0, ErrClosed
	}
	for {
		p, err := c.enter(ctx)
		if err != nil {
			return 0, err
		}
		cm, pt, err := c.first(ctx, p)
		if err != nil {
			c.gate.RUnlock()
			if err == errSeekBegun {
				continue
			}
			return 0, err
		}
		ms := room(c.held())
		ms[0].fill(cm.Message, pt)
		n := 1
		for ; n < len(ms); n++ {
			var ok bool
			if cm, pt, ok = c.take(pt.at.Load() + 1); !ok {
				break
			}
			ms[n].fill(cm.Message, pt)
		}
		c.gate.RUnlock()
		for i := range ms[:n] {
			c.delivered(ms[i].k, &ms[i])
		}
		return n, nil
	}
}

// Chan returns the merged stream as a channel, fed from the same clusters
// that Receive and ReceiveBatch read: each message goes to exactly one of
// them. The first call starts a goroutine that takes each message and
// hands it over, which costs a goroutine switch per message that Receive
// does not pay. The channel is closed by Close.
func (c *Consumer) Chan() <-chan *Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out == nil {
		c.out = make(chan *Message)
		c.bg.Add(1)
		if c.subs != nil {
			go c.feedTopics(c.out)
		} else {
			go c.feed(c.out)
		}
	}
	return c.out
}

// feed is Chan's goroutine: it takes messages as Receive does and offers
// them on out, one at a time, until Close. A message it holds when a seek
// of its cluster begins was read before the seek: it is dropped (offer).
func (c *Consumer) feed(out chan *Message) {
	defer c.bg.Done()
	defer close(out)
	ctx := context.Background() // the Consumer's closing ends the waits
	for {
		p, err := c.enter(ctx)
		if err != nil {
			return
		}
		cm, pt, err := c.first(ctx, p)
		c.gate.RUnlock()
		if err == errSeekBegun {
			continue
		}
		if err != nil {
			return
		}
		m := c.carve()
		m.fill(cm.Message, pt)
		if !c.offer(out, m, pt.k, p) {
			return
		}
	}
}

// errSeekBegun ends a wait that a SeekByTime interrupted: the take starts
// over after the seek.
var errSeekBegun = errors.New("consumer: seek begun")

// enter holds the gate shared for a take and returns the seek state it
// read under it; it waits out a seek in progress first. The caller
// releases the gate (c.gate.RUnlock) when enter returns no error.
func (c *Consumer) enter(ctx context.Context) (*pause, error) {
	for {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		c.gate.RLock()
		p := c.state.Load()
		if !p.seeking {
			return p, nil
		}
		c.gate.RUnlock()
		select {
		case <-p.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closing:
			return nil, ErrClosed
		}
	}
}

// first takes one message under the gate: one already there, else the
// first to come. It returns errSeekBegun when a seek begins first. When
// the cluster set changes while it waits, it looks again.
func (c *Consumer) first(ctx context.Context, p *pause) (pulsar.ConsumerMessage, *part, error) {
	for {
		if cm, pt, ok := c.take(c.rotor.Load()); ok {
			return cm, pt, nil
		}
		// Over more parts than wait selects on plainly, a wait allocates
		// for each part: first let the partitions' pulsar-client-go
		// dispatchers run, which mostly have a message to hand over.
		if len(c.set.Load().parts) > maxPlainWait {
			if cm, pt, ok := c.yieldTake(); ok {
				return cm, pt, nil
			}
		}
		cm, pt, err := c.wait(ctx, p.begin)
		if err == errWake || err == errSetChanged {
			continue
		}
		if err != nil || c.admit(cm.Message, pt) {
			return cm, pt, err
		}
	}
}

// waitYields is how many times yieldTake lets other goroutines run
// before a take waits.
const waitYields = 2

// yieldTake takes a message (see take) after yielding the processor, up
// to waitYields times; ok is false when none came.
func (c *Consumer) yieldTake() (pulsar.ConsumerMessage, *part, bool) {
	for range waitYields {
		runtime.Gosched()
		if cm, pt, ok := c.take(c.rotor.Load()); ok {
			return cm, pt, true
		}
	}
	return pulsar.ConsumerMessage{}, nil, false
}

// take returns a message to hand over that is already there: a released
// one first, else one from the parts (from index start) that admit lets
// through; ok is false when there is none.
func (c *Consumer) take(start uint32) (pulsar.ConsumerMessage, *part, bool) {
	for {
		if c.hold.busy.Load() != 0 {
			if raw, pt, ok := c.hold.pop(); ok {
				return pulsar.ConsumerMessage{Message: raw}, pt, true
			}
		}
		cm, pt, ok := c.poll(start)
		if !ok || c.admit(cm.Message, pt) {
			return cm, pt, ok
		}
		start = pt.at.Load() + 1
	}
}

// poll takes a message that is already there, trying the parts (every
// partition of every cluster) in turn from index start (taken modulo
// their number); ok is false when every part's channel is empty. It moves
// the rotor past the part it took from.
func (c *Consumer) poll(start uint32) (pulsar.ConsumerMessage, *part, bool) {
	ps := c.set.Load().parts
	n := uint32(len(ps))
	if n == 0 {
		return pulsar.ConsumerMessage{}, nil, false
	}
	i := start % n
	for range n {
		p := ps[i]
		select {
		case cm, ok := <-p.in:
			if ok {
				if c.rotor.Load() != i+1 {
					c.rotor.Store(i + 1)
				}
				return cm, p, true
			}
		default:
		}
		if i++; i == n {
			i = 0
		}
	}
	return pulsar.ConsumerMessage{}, nil, false
}

// held is how many messages the parts' channels hold, plus one, plus
// those held or released by the hand-over: a batch's size, counted after
// its first message is taken.
func (c *Consumer) held() int {
	n := 1 + int(c.hold.busy.Load())
	for _, p := range c.set.Load().parts {
		n += len(p.in)
	}
	return n
}

// delivered counts and observes a message handed to the caller.
func (c *Consumer) delivered(k *cluster, m *Message) {
	k.delivered.Add(1)
	if m.RedeliveryCount > 0 {
		k.redelivered.Add(1)
	}
	k.lastPublish.Store(m.PublishTime.UnixNano())
	if obs := c.cfg.observer; obs != nil {
		obs.OnReceive(m)
	}
}
