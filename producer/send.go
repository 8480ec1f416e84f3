package producer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// cost is what a message holds of the memory limit.
func cost(m *Message) int64 {
	n := len(m.Key) + len(m.Value)
	for k, v := range m.Properties {
		n += len(k) + len(v)
	}
	return int64(n)
}

func toPulsar(pm *pulsar.ProducerMessage, m *Message, props map[string]string) {
	pm.Key = m.Key
	pm.Payload = m.Value
	pm.Properties = props
	pm.EventTime = m.EventTime
}

// eventPool recycles the Events of observed messages: an Event goes back
// to it once OnDone has returned (observers must not keep it; see
// Observer), so that observing does not add an allocation, and its bytes,
// to every message.
var eventPool = sync.Pool{New: func() any { return new(Event) }}

// observe starts an Event for msg when there is an observer; it returns the
// Event (nil when not observed) and the properties to send.
func (p *Producer) observe(ctx context.Context, op Op, c *cluster, pt *partition, msg *Message, n int64) (*Event, map[string]string) {
	if c.obs == nil {
		return nil, msg.Properties
	}
	// Field by field: the Event is zero (see end), and copying a whole
	// Event literal into it took a typed memmove with write barriers over
	// every field, the most costly line of observing.
	ev := eventPool.Get().(*Event)
	ev.Op, ev.Topic, ev.Cluster, ev.Partition, ev.ServiceURL = op, p.cfg.topic, c.name, pt.idx, c.url
	ev.Key, ev.Properties, ev.Bytes, ev.Start = msg.Key, msg.Properties, n, time.Now()
	if props := c.obs.OnStart(ctx, ev); props != nil {
		return ev, props
	}
	return ev, msg.Properties
}

// end tells the observer ev's outcome and recycles ev.
func (c *cluster) end(ev *Event) {
	c.obs.OnDone(ev)
	*ev = Event{}
	eventPool.Put(ev)
}

// fail reports an error that happened before the writer took the message.
func (c *cluster) fail(ev *Event, err error) error {
	if ev != nil {
		ev.Err = err
		c.end(ev)
	}
	return err
}

// Send writes msg and waits for the broker's acknowledgement. ctx bounds the
// whole call: waiting for buffer space, the write and the ack. If ctx ends
// after the message was handed to its partition's writer, Send returns an
// error matching ctx.Err() and the message may still be written. Send
// flushes the partition's current batch, so it does not wait for Linger;
// the messages of that partition handed over before it are written before it.
func (p *Producer) Send(ctx context.Context, msg *Message) (ID, error) {
	if msg == nil {
		return ID{}, &SendError{Err: ErrNilMessage}
	}
	if !p.enter() {
		return ID{}, &SendError{Key: msg.Key, Err: ErrClosed}
	}
	defer p.leave()
	c, pt, err := p.pick(ctx, msg.Key)
	n := cost(msg)
	ev, props := p.observe(ctx, OpSend, c, pt, msg, n)
	if err == nil {
		err = c.budget.acquire(ctx, n, p.done, p.cfg.blockWhenFull)
	}
	if err != nil {
		return ID{}, c.fail(ev, c.sendError(ctx, msg.Key, pt.idx, err))
	}
	pm := &pulsar.ProducerMessage{}
	toPulsar(pm, msg, props)
	c.health.handed.Add(1)
	mid, err := pt.w.Send(ctx, pm)
	c.health.completed.Add(1)
	c.budget.release(1, n)
	if err != nil {
		return ID{}, c.fail(ev, c.sendError(ctx, msg.Key, pt.idx, err))
	}
	c.health.acks.Add(1)
	id := ID{Cluster: c.name, Partition: pt.idx, MessageID: mid}
	if ev != nil {
		ev.ID = id
		c.end(ev)
	}
	return id, nil
}

// SendAsync hands msg to its partition's writer, which batches it, and
// returns; cb (which may be nil) gets the outcome exactly once. ctx bounds
// only the hand-over: waiting for buffer space when the cluster's share is
// full. Once accepted, the message is bounded by the send timeout. When the
// hand-over fails (nil or closed producer, ctx ended), cb runs on the
// caller's goroutine before SendAsync returns.
func (p *Producer) SendAsync(ctx context.Context, msg *Message, cb Callback) {
	if msg == nil {
		if cb != nil {
			cb(ID{}, nil, &SendError{Err: ErrNilMessage})
		}
		return
	}
	if !p.enter() {
		if cb != nil {
			cb(ID{}, msg, &SendError{Key: msg.Key, Err: ErrClosed})
		}
		return
	}
	c, pt, err := p.pick(ctx, msg.Key)
	n := cost(msg)
	f := new(inflight)
	ev, props := p.observe(ctx, OpSendAsync, c, pt, msg, n)
	if err == nil {
		err = c.budget.acquire(ctx, n, p.done, p.cfg.blockWhenFull)
	}
	if err != nil {
		p.leave()
		err = c.fail(ev, c.sendError(ctx, msg.Key, pt.idx, err))
		if cb != nil {
			cb(ID{}, msg, err)
		}
		return
	}
	f.ctx, f.msg, f.cb, f.part, f.cost, f.ev = ctx, msg, cb, pt, n, ev
	toPulsar(&f.pm, msg, props)
	pt.add(f)
	c.health.handed.Add(1)
	pt.w.SendAsync(ctx, &f.pm, c.onAck)
	p.leave()
}

// Flush writes every batch and waits until every message handed over before
// the call has its outcome and its callback has returned. ctx bounds the
// wait. Errors name the clusters that did not finish.
func (p *Producer) Flush(ctx context.Context) error {
	if !p.enter() {
		return ErrClosed
	}
	defer p.leave()
	if err := p.flushWriters(ctx); err != nil {
		return err
	}
	for _, c := range p.clusters {
		select {
		case <-c.disp.barrier():
		case <-ctx.Done():
			return &ClusterError{Cluster: c.name, Op: "flush", Err: ctx.Err()}
		}
	}
	return nil
}

// flushWriters flushes every partition writer of every cluster in parallel.
func (p *Producer) flushWriters(ctx context.Context) error {
	errs := make([][]error, len(p.clusters))
	var wg sync.WaitGroup
	for i, c := range p.clusters {
		errs[i] = make([]error, len(c.parts))
		for j, pt := range c.parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i][j] = pt.w.FlushWithCtx(ctx)
			}()
		}
	}
	wg.Wait()
	var all []error
	for i, perPart := range errs {
		if err := errors.Join(perPart...); err != nil {
			all = append(all, &ClusterError{Cluster: p.clusters[i].name, Op: "flush", Err: err})
		}
	}
	return errors.Join(all...)
}
