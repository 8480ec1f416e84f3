package producertest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"
)

// writer is a fake pulsar-client-go producer on one partition, as
// package producer sees it (hook.Writer).
type writer struct {
	p  *Partition
	cl *client

	// cb orders the writer's callbacks: it is held from taking a message
	// that SendAsync calls back (without AsyncAcks; with it, a refusal
	// only) or taking held ones (Ack, ...) until their callbacks have run,
	// so that they run one at a time and in order, as a pulsar-client-go
	// producer's run on its connection's goroutine. It is locked before
	// cs.mu, never while cs.mu is held, and the callbacks run without
	// cs.mu.
	cb sync.Mutex

	bulk bool // reserved for bulk transactions: it may batch them

	// Guarded by cs.mu.
	last      *txn // the transaction of the last message taken (bulk writers)
	closed    bool
	held      []pending     // written, not yet reported, oldest first
	reporting int           // taken from held, callbacks not yet run
	drained   chan struct{} // closed when nothing is held or reporting; nil while no flush waits
	flushing  bool          // a flush waits: acknowledge batches that are not full
	flushes   int           // flushes waiting (Partition.Flushing)

	// With AsyncAcks: the batch size and the goroutine that acknowledges.
	batch      int
	kick       chan struct{} // capacity 1: something may wait
	stop, done chan struct{}
}

// pending is a written message whose outcome is not reported yet.
type pending struct {
	rec  int // its record in p.msgs; -1 when not kept
	pm   *pulsar.ProducerMessage
	cb   func(pulsar.MessageID, *pulsar.ProducerMessage, error)
	txn  *txn
	conn int // the connection of the writer it was sent to (Event.Conn)
	// flush is set on the last message held when a flush began: the
	// flush returns the error it fails with (see FlushWithCtx).
	flush *flushWait
}

// flushWait is what a flush learns of the message it waits for.
type flushWait struct{ err error }

// open opens a writer on p for cl, reserved for bulk transactions when
// bulk is set. Called with cs.mu held.
func (p *Partition) open(cl *client, bulk bool) *writer {
	w := &writer{p: p, cl: cl, batch: p.c.cs.opt.batch, bulk: bulk}
	if w.batch > 0 {
		w.kick, w.stop, w.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go w.run()
	}
	p.writers = append(p.writers, w)
	return w
}

// SendAsync writes pm and acknowledges it at once, or holds it (Hold,
// AsyncAcks), or refuses it.
//
// With AsyncAcks a message it takes is only held, so SendAsync takes cb
// only to call back a refusal: a sender does not wait while the writer's
// goroutine runs a batch's callbacks, as pulsar-client-go's SendAsync
// does not wait for its connection's goroutine.
func (w *writer) SendAsync(ctx context.Context, pm *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	p := w.p
	cs := p.c.cs
	async := w.batch > 0
	if !async {
		w.cb.Lock()
		defer w.cb.Unlock()
	}
	cs.mu.Lock()
	t := p.c.txnOf(w, pm)
	if err := w.refusal(ctx, t); err != nil {
		p.log(OpSendFail, pm.Key, t, err, w.cl.n)
		cs.mu.Unlock()
		if async {
			w.cb.Lock()
			defer w.cb.Unlock()
		}
		cb(nil, pm, err)
		return
	}
	e := p.write(pm, t, w.cl.n)
	e.cb = cb
	if p.c.holding || w.batch > 0 {
		w.held = append(w.held, e)
		if len(w.held) >= w.batch {
			w.nudge()
		}
		cs.mu.Unlock()
		return
	}
	ids := p.stamp([]pending{e}, 0)
	cs.mu.Unlock()
	cb(&ids[0], pm, nil)
}

// refusal returns why w refuses a message sent in t (nil: none), or nil.
// Called with cs.mu held.
func (w *writer) refusal(ctx context.Context, t *txn) error {
	if w.closed {
		return pulsar.ErrProducerClosed
	}
	c := w.p.c
	n := c.sends
	c.sends++
	switch {
	case c.failAtErr != nil && n == c.failAt:
		return c.failAtErr
	case ctx.Err() != nil:
		return pulsar.ErrContextExpired
	case w.p.failErr != nil:
		return w.p.failErr
	case t != nil && t.state != pulsar.TxnOpen:
		return fmt.Errorf("%w: producertest: transaction %d is not open", pulsar.ErrTransaction, t.id)
	}
	return nil
}

// Send is SendAsync that waits for the outcome, or for ctx.
func (w *writer) Send(ctx context.Context, pm *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	type result struct {
		id  pulsar.MessageID
		err error
	}
	done := make(chan result, 1)
	w.SendAsync(ctx, pm, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- result{id, err} })
	select {
	case r := <-done:
		return r.id, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// FlushWithCtx waits, as pulsar-client-go's does, until every message
// written has been reported and its callback has returned, or ctx ends.
// As pulsar-client-go v0.21.0's does, it returns the error of the last
// message held when it began, if that one failed: a flush over messages
// that failed before the last one returns nil.
func (w *writer) FlushWithCtx(ctx context.Context) error {
	cs := w.p.c.cs
	var last *flushWait
	cs.locked(func() { w.flushes++ })
	defer cs.locked(func() { w.flushes-- })
	for {
		cs.mu.Lock()
		if last == nil && len(w.held) > 0 {
			e := &w.held[len(w.held)-1]
			if e.flush == nil {
				e.flush = &flushWait{}
			}
			last = e.flush
		}
		if len(w.held) == 0 && w.reporting == 0 {
			var err error
			if last != nil {
				err = last.err
			}
			cs.mu.Unlock()
			return err
		}
		w.flushing = true
		w.nudge()
		if w.drained == nil {
			w.drained = make(chan struct{})
		}
		drained := w.drained
		cs.mu.Unlock()
		select {
		case <-drained:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close closes the writer. The messages it holds are dropped without a
// callback, as pulsar-client-go drops those still in a batch: they were
// written, and their outcome is never reported.
func (w *writer) Close() {
	cs := w.p.c.cs
	cs.mu.Lock()
	if w.closed {
		cs.mu.Unlock()
		return
	}
	w.closed = true
	w.held = nil
	w.wake()
	ws := w.p.writers
	for i := range ws {
		if ws[i] == w {
			w.p.writers = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	cs.mu.Unlock()
	if w.stop != nil {
		close(w.stop)
		<-w.done
	}
}

// wake wakes the flushes waiting for w when nothing is left for them to
// wait for. Called with cs.mu held.
func (w *writer) wake() {
	if len(w.held) == 0 && w.reporting == 0 {
		w.flushing = false
		if w.drained != nil {
			close(w.drained)
			w.drained = nil
		}
	}
}

// nudge wakes the AsyncAcks goroutine, if any. Called with cs.mu held.
func (w *writer) nudge() {
	if w.batch == 0 {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run is the AsyncAcks goroutine: at each kick it acknowledges the full
// batches w holds, and the rest too while a flush waits, unless its
// cluster holds acknowledgements.
func (w *writer) run() {
	defer close(w.done)
	cs := w.p.c.cs
	ws := []*writer{w}
	for {
		select {
		case <-w.kick:
		case <-w.stop:
			return
		}
		for {
			w.cb.Lock()
			cs.mu.Lock()
			n := len(w.held)
			if w.p.c.holding || n == 0 || n < w.batch && !w.flushing {
				cs.mu.Unlock()
				w.cb.Unlock()
				break
			}
			bs := cs.take(ws, w.batch, 0, nil)
			cs.mu.Unlock()
			cs.report(bs, nil)
			w.cb.Unlock()
		}
	}
}

// batch is messages taken from one writer's held ones, to report.
type batch struct {
	w   *writer
	es  []pending
	ids []msgID // nil when they failed
}

// take takes from each of ws the n oldest messages it holds (n < 0: all)
// as one batch: acknowledged (one broker entry that claims missing more
// messages than it holds) when err is nil, else failed with err. Called
// with the writers' cb and cs.mu held.
func (cs *Clusters) take(ws []*writer, n, missing int, err error) []batch {
	var bs []batch
	for _, w := range ws {
		k := len(w.held)
		if n >= 0 {
			k = min(k, n)
		}
		if k == 0 {
			continue
		}
		b := batch{w: w, es: w.held[:k:k]}
		w.held = w.held[k:]
		if len(w.held) == 0 {
			w.held = nil // so that the array goes with b
		}
		if err == nil {
			b.ids = w.p.stamp(b.es, missing)
		} else {
			for _, e := range b.es {
				w.p.log(OpFail, e.pm.Key, e.txn, err, e.conn)
				if e.flush != nil {
					e.flush.err = err
				}
			}
		}
		w.reporting += k
		bs = append(bs, b)
	}
	return bs
}

// report runs the callbacks of what take took, then wakes the flushes
// waiting for them. Called with the writers' cb held, without cs.mu.
func (cs *Clusters) report(bs []batch, err error) {
	if len(bs) == 0 {
		return
	}
	for _, b := range bs {
		for i, e := range b.es {
			if err != nil {
				e.cb(nil, e.pm, err)
			} else {
				e.cb(&b.ids[i], e.pm, nil)
			}
		}
	}
	cs.mu.Lock()
	for _, b := range bs {
		b.w.reporting -= len(b.es)
		b.w.wake()
	}
	cs.mu.Unlock()
}

// settle takes what the writers of parts hold (see take) and reports it;
// release also stops c holding.
func (cs *Clusters) settle(c *Cluster, parts []*Partition, missing int, err error, release bool) {
	cs.settleFirst(c, parts, -1, missing, err, release)
}

// settleFirst is settle of the n oldest messages each writer holds (n < 0:
// all).
func (cs *Clusters) settleFirst(c *Cluster, parts []*Partition, n, missing int, err error, release bool) {
	ws := cs.lockWriters(parts)
	if release {
		c.holding = false
	}
	bs := cs.take(ws, n, missing, err)
	cs.mu.Unlock()
	cs.report(bs, err)
	unlockAll(ws)
}

// lockWriters returns the writers of parts with their cb locked, and cs.mu
// locked.
func (cs *Clusters) lockWriters(parts []*Partition) []*writer {
	for {
		cs.mu.Lock()
		ws := writersOf(parts)
		cs.mu.Unlock()
		for _, w := range ws {
			w.cb.Lock()
		}
		cs.mu.Lock()
		if slices.Equal(ws, writersOf(parts)) {
			return ws
		}
		// A writer opened or closed meanwhile: again.
		cs.mu.Unlock()
		unlockAll(ws)
	}
}

// writersOf returns the open writers of parts, in a fixed order: writers
// are locked in it. Called with cs.mu held.
func writersOf(parts []*Partition) []*writer {
	var ws []*writer
	for _, p := range parts {
		ws = append(ws, p.writers...)
	}
	return ws
}

func unlockAll(ws []*writer) {
	for _, w := range ws {
		w.cb.Unlock()
	}
}
