package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/keyroute/keyroute/router"
)

// cost is what a message holds of the memory limit.
func cost(m *Message) int64 {
	n := len(m.Key) + len(m.Value)
	if len(m.Properties) > 0 { // ranging over an empty map still starts an iterator
		for k, v := range m.Properties {
			n += len(k) + len(v)
		}
	}
	return int64(n)
}

// check returns an error for a message whose fields contradict each other.
func check(m *Message) error {
	switch {
	case m.encodeErr != nil:
		return fmt.Errorf("%w: the value could not be encoded: %w", ErrBadMessage, m.encodeErr)
	case m.NullValue && len(m.Value) > 0:
		return fmt.Errorf("%w: NullValue set with a %d-byte Value", ErrBadMessage, len(m.Value))
	case m.DeliverAfter < 0:
		return fmt.Errorf("%w: DeliverAfter %s is negative", ErrBadMessage, m.DeliverAfter)
	case m.DeliverAfter > 0 && !m.DeliverAt.IsZero():
		return fmt.Errorf("%w: both DeliverAfter and DeliverAt set", ErrBadMessage)
	case !m.DeliverAt.IsZero() && m.DeliverAt.UnixNano() <= 0:
		// pulsar-client-go would take it for no delivery time at all.
		return fmt.Errorf("%w: DeliverAt %s is not after 1970", ErrBadMessage, m.DeliverAt)
	case m.DisableReplication && len(m.ReplicationClusters) > 0:
		return fmt.Errorf("%w: both DisableReplication and ReplicationClusters set", ErrBadMessage)
	case m.SequenceID != nil && *m.SequenceID < 0:
		return fmt.Errorf("%w: SequenceID %d is negative", ErrBadMessage, *m.SequenceID)
	}
	if len(m.Properties) > 0 { // ranging over an empty map still starts an iterator
		if name, reserved := router.ReservedProperty(m.Properties); reserved {
			return fmt.Errorf("%w: property %q: names beginning with %q are reserved for keyroute's hand-over (HANDOVER.md)",
				ErrBadMessage, name, router.PropPrefix)
		}
	}
	return nil
}

// hand routes msg, takes its budget and hands it to its partition's writer
// with cb. A message that fails before the writer has it is refused: it
// gets its outcome through the same ordered path, after the outcomes of
// the messages of its partition handed over before it. A message of a key
// that a topology change moved may be held instead, until its hand-over
// releases it (see handover.go). hand returns the refusal error (nil when
// the writer, or the hand-over, has the message) and the partition it
// went to.
func (p *Producer) hand(ctx context.Context, op Op, msg *Message, cb Callback) (*partition, error) {
	return p.handWith(ctx, op, msg, cb, nil, nil, msg.Properties)
}

// handWith is hand for a message that may have been observed already (ev
// not nil, with f, its inflight, and props, what the observer gave): one
// that a change made hand over again (see sendMoved).
func (p *Producer) handWith(ctx context.Context, op Op, msg *Message, cb Callback, f *inflight, ev *Event, props map[string]string) (*partition, error) {
	var (
		c   *cluster
		pt  *partition
		h   uint64
		err error
	)
	n := cost(msg)
	for {
		s := p.snap.Load()
		switch {
		case p.closed.Load():
			c, pt, h = p.place(s, msg.Key)
			err = ErrClosed
		default:
			if err = check(msg); err != nil {
				c, pt, h = p.place(s, msg.Key)
			} else {
				c, pt, h, err = p.pick(ctx, s, msg.Key)
			}
		}
		switch {
		case ev != nil:
			// Placed again after a change (see put): the observer has
			// seen the message already.
			ev.Partition, ev.Cluster, ev.ServiceURL = pt.idx, c.name, c.url
		case c.obs != nil:
			// The Event comes with the inflight, which must be known now.
			f = pt.take()
			ev = eventFor(f)
			props = p.observe(ctx, op, c, pt, msg, n, ev)
		}
		if err == nil {
			err = c.budget.acquire(ctx, n, p.done, p.cfg.blockWhenFull, p.onCallbackGoroutine)
		}
		if err != nil {
			break
		}
		if s.moves != nil && msg.Key != "" {
			if sm := s.moves[router.Slot(h)]; sm != nil && sm.owes(pt) {
				return pt, p.handMoved(sm, h, &held{ctx: ctx, op: op, msg: msg, cb: cb, c: c, pt: pt, f: f, ev: ev, props: props, n: n, at: time.Now(), epoch: s.epoch})
			}
		}
		switch err = p.put(ctx, op, msg, cb, pt, f, ev, props, n, s.epoch); err {
		case nil:
			return pt, nil
		case errPlacedBefore:
			c.budget.release(1, n)
			err = nil
			continue
		}
		c.budget.release(1, n)
		break
	}
	if f == nil {
		f = pooledInflight()
	}
	f.ctx, f.msg, f.cb, f.part, f.cost, f.ev = ctx, msg, cb, pt, n, ev
	f.userCB = op == OpSendAsync && cb != nil
	c.refuse(f, err)
	return pt, err
}

// errPlacedBefore is put's answer for a message placed under a snapshot
// older than a change that marked its partition (see put): hand places
// it again.
var errPlacedBefore = errors.New("placed before a topology change")

// put hands a message that holds its budget to pt's writer, in f when
// it is not nil. epoch is the one it was placed under: a partition that a
// later change marked (it lost keys, HANDOVER.md section 5.2) takes no
// message placed before, so that none lands behind the change's marker
// (errPlacedBefore). It returns ErrClosed when the partition is closed;
// the caller then gives the budget back.
func (p *Producer) put(ctx context.Context, op Op, msg *Message, cb Callback, pt *partition, f *inflight, ev *Event, props map[string]string, n int64, epoch uint64) error {
	pt.mu.Lock()
	switch {
	case pt.closed:
		pt.mu.Unlock()
		return ErrClosed
	case pt.markEpoch > epoch:
		pt.mu.Unlock()
		return errPlacedBefore
	}
	if f == nil {
		f = pt.takeLocked()
	}
	f.ctx, f.msg, f.cb, f.cost, f.accepted = ctx, msg, cb, n, true
	f.userCB = op == OpSendAsync && cb != nil
	f.part, f.ev = pt, ev
	toPulsar(&f.pm, msg, props)
	if cb != nil {
		pt.placeLocked(f, pending)
	} else {
		pt.holdLooseLocked(f)
	}
	pt.handed.Add(1)
	// f may be reported and reused once the writer has it: it is not
	// touched again.
	pt.w.SendAsync(ctx, &f.pm, f.onAck)
	pt.mu.Unlock()
	return nil
}

// flushFor sends pt's current batch, so that Send does not wait for
// Linger. Close cancels the wait: pulsar-client-go v0.21.0 never answers a
// flush still queued when its producer closes.
func (p *Producer) flushFor(ctx context.Context, pt *partition) {
	fctx, stop := p.untilClose(ctx)
	_ = flushWriter(fctx, pt.w) // the message's own outcome says what happened
	stop()
}

// untilClose returns a ctx that also ends when Close begins, and the func
// that releases it. A hand-over that waits on a writer (a flush) uses it,
// so that Close, which waits for hand-overs, never waits on a writer.
func (p *Producer) untilClose(ctx context.Context) (context.Context, func()) {
	fctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(p.closing, cancel)
	return fctx, func() {
		stop()
		cancel()
	}
}

// Send writes msg and waits for the broker's acknowledgement. ctx bounds the
// whole call: waiting for buffer space, the write and the ack. Send
// flushes the partition's current batch, so it does not wait for Linger.
//
// Send returns after the outcomes of the messages of msg's key (of its
// partition) handed over before it have been reported, as their callbacks
// would be, also when it fails before the writer has msg (its ctx ended, its
// cluster is down, the buffer is full): then it returns a not-written
// error (NotWritten) in its turn. If ctx ends after the writer has msg,
// Send returns at once with an error that matches ctx.Err() and whose
// outcome is unknown: the message may still be written, and it holds its
// share of the buffer until pulsar-client-go reports it. Called from a
// Callback, Send returns ErrInCallback at once.
func (p *Producer) Send(ctx context.Context, msg *Message) (ID, error) {
	switch {
	case p == nil:
		return ID{}, &SendError{Err: ErrNilProducer, notWritten: true}
	case msg == nil:
		return ID{}, &SendError{Err: ErrNilMessage, notWritten: true}
	case p.onCallbackGoroutine():
		return ID{}, &SendError{Key: msg.Key, Err: ErrInCallback, notWritten: true}
	}
	var (
		id   ID
		err  error
		done = make(chan struct{})
	)
	pt, herr := p.hand(ctx, OpSend, msg, func(i ID, _ *Message, e error) {
		id, err = i, e
		close(done)
	})
	if herr != nil {
		<-done // in its turn; bounded by the earlier messages' own outcomes
		return id, err
	}
	if p.cfg.batching && p.enter() {
		p.flushFor(ctx, pt)
		p.leave()
	}
	select {
	case <-done:
		return id, err
	case <-ctx.Done():
	}
	select {
	case <-done:
		return id, err
	default:
	}
	return ID{}, &SendError{Key: msg.Key, Cluster: pt.c.name, Partition: pt.idx, Cause: ctx.Err()}
}

// SendAsync hands msg to its partition's writer, which batches it, and
// returns; cb (which may be nil) gets the outcome exactly once, on the
// cluster's callback goroutine, after the callbacks of the messages of the
// same key handed over before it. ctx bounds only the hand-over: waiting
// for buffer space when the cluster's share is full. Once the writer has
// the message, the message is bounded by the send timeout. A message that
// fails before (closed producer, ctx ended, cluster down, buffer full)
// gets a not-written error (NotWritten) through cb in the same order. A
// nil message or a nil Producer calls cb on the caller's goroutine: they
// have no key to order by.
func (p *Producer) SendAsync(ctx context.Context, msg *Message, cb Callback) {
	if p == nil || msg == nil {
		if cb != nil {
			err := &SendError{Err: ErrNilMessage, notWritten: true}
			if p == nil {
				err.Err = ErrNilProducer
			}
			if msg != nil {
				err.Key = msg.Key
			}
			cb(ID{}, msg, err)
		}
		return
	}
	_, _ = p.hand(ctx, OpSendAsync, msg, cb)
}

// Flush writes every batch and waits until every message handed over before
// the call has its outcome and its callback has returned. ctx bounds the
// wait. A Close that begins meanwhile ends the flush; Flush then returns
// once Close has reported every outcome. Errors name the clusters that did
// not finish. A message that failed says so in its own outcome, not in
// Flush's error: nil means that every outcome is in, not that every
// message was written (pulsar-client-go's Flush returns the error of each
// partition's last message; keyroute's does not). Messages that a
// topology change holds (see Update) count: Flush first waits for the
// change's hand-overs to end. Called from a Callback, Flush returns
// ErrInCallback.
func (p *Producer) Flush(ctx context.Context) error {
	if p == nil {
		return ErrNilProducer
	}
	if p.onCallbackGoroutine() {
		return ErrInCallback
	}
	if err := p.awaitHandover(ctx); err != nil {
		return err
	}
	if !p.enter() {
		return ErrClosed
	}
	cls := p.writing()
	barriers := make([]<-chan struct{}, len(cls))
	for i, c := range cls {
		barriers[i] = c.disp.barrier()
	}
	fctx, stop := p.untilClose(ctx)
	err := flushWriters(fctx, cls)
	stop()
	p.leave()
	// Interrupted by Close: Close reports every outcome, and the barriers
	// pass when it has.
	if err != nil && (ctx.Err() != nil || !p.closed.Load()) {
		return err
	}
	for i, c := range cls {
		select {
		case <-barriers[i]:
		case <-ctx.Done():
			return &ClusterError{Cluster: c.name, Op: "flush", Err: ctx.Err()}
		}
	}
	return nil
}

// flushWriter flushes w and returns an error only when ctx cut the flush
// short. A pulsar-client-go flush also fails with the error of its
// partition's last pending message (v0.21.0, pendingItem's flush
// callback); that is the message's outcome, reported through its own
// callback, not the flush's, so it is dropped.
func flushWriter(ctx context.Context, w writer) error {
	if err := w.FlushWithCtx(ctx); err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	return nil
}

// flushWriters flushes every partition writer of every cluster of cls in
// parallel (flushWriter). It returns an error naming each cluster that did
// not finish before ctx ended.
func flushWriters(ctx context.Context, cls []*cluster) error {
	errs := make([][]error, len(cls))
	var wg sync.WaitGroup
	for i, c := range cls {
		errs[i] = make([]error, len(c.parts))
		for j, pt := range c.parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i][j] = flushWriter(ctx, pt.w)
			}()
		}
	}
	wg.Wait()
	var all []error
	for i, perPart := range errs {
		if err := errors.Join(perPart...); err != nil {
			all = append(all, &ClusterError{Cluster: cls[i].name, Op: "flush", Err: err})
		}
	}
	return errors.Join(all...)
}
