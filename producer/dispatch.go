package producer

import (
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// straggleDelay bounds how long an outcome can wait in the queue for the
// rest of its batch (see push).
const straggleDelay = time.Millisecond

// dispatcher is one cluster's callback goroutine: the one serial path
// through which every outcome that has a callback (SendAsync's, and Send's
// own) reaches the caller. Outcomes arrive in any order: from
// pulsar-client-go's goroutines, from senders whose message failed before
// it reached a writer, from Close. The dispatcher reports each partition's
// outcomes in the order the messages were handed over (their seq), holding
// any that come early; so a key's callbacks run in call order, failures
// before acceptance included. push never waits for the callback
// goroutine: it appends to a queue under a lock held only for the append,
// and the dispatcher takes the queue whole.
//
// pulsar-client-go reports a batch's acks one after the other on one
// goroutine, doing a few hundred nanoseconds of its own work between them;
// the callback goroutine drains an outcome in less and would park again, so
// waking it on the first outcome of an empty queue meant up to one wake-up
// per message. push therefore wakes it at the end of each batch, and a
// timer wakes it for outcomes whose batch does not end (a batch-mate failed
// or timed out before its ack came).
type dispatcher struct {
	c *cluster

	mu       sync.Mutex // guards queue, stopped and armed
	queue    []*inflight
	stopped  bool
	armed    bool        // straggle is set
	straggle *time.Timer // wakes run for outcomes whose batch did not end

	signal chan struct{} // capacity 1: work may be queued
	stop   chan struct{} // closed by close: drain and exit
	done   chan struct{} // closed when run returns

	goid     uint64      // of the goroutine that runs callbacks; set before run starts
	inside   atomic.Bool // a callback is running (see onCallbackGoroutine)
	barriers []*barrier  // Flush barriers not yet passed; owned by run
}

// barrier is a Flush's wait on one cluster: it is passed when every
// partition has reported its messages up to upTo.
type barrier struct {
	upTo []uint64 // by partition index: the last seq handed over before the Flush
	done chan struct{}
}

func newDispatcher(c *cluster) *dispatcher {
	d := &dispatcher{
		c:      c,
		signal: make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	for _, pt := range c.parts {
		pt.next = 1
	}
	d.straggle = time.AfterFunc(time.Hour, d.wake)
	d.straggle.Stop()
	started := make(chan struct{})
	go func() {
		d.goid = goid()
		close(started)
		d.run()
	}()
	<-started
	return d
}

// endsBurst reports whether an outcome is the last of what pulsar-client-go
// reports in one go: a failure, or the last message of its batch.
func endsBurst(id pulsar.MessageID, err error) bool {
	return err != nil || id == nil || id.BatchIdx() >= id.BatchSize()-1
}

func (d *dispatcher) wake() {
	select {
	case d.signal <- struct{}{}:
	default:
	}
}

// push queues f for its callback, waking the callback goroutine now when
// last is true, else within straggleDelay. After the dispatcher stopped,
// push reports f inline.
func (d *dispatcher) push(f *inflight, last bool) {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		if f.barrier != nil {
			close(f.barrier.done)
			return
		}
		d.deliver(f)
		return
	}
	d.queue = append(d.queue, f)
	if !last && !d.armed {
		d.armed = true
		d.straggle.Reset(straggleDelay)
	}
	d.mu.Unlock()
	if last {
		d.wake()
	}
}

// take returns what was pushed, oldest first, and leaves spare as the
// queue.
func (d *dispatcher) take(spare []*inflight, stopping bool) []*inflight {
	d.mu.Lock()
	defer d.mu.Unlock()
	batch := d.queue
	d.queue = spare[:0]
	if d.armed {
		d.armed = false
		d.straggle.Stop()
	}
	if stopping {
		d.stopped = true
	}
	return batch
}

func (d *dispatcher) run() {
	defer close(d.done)
	var batch, spare []*inflight
	for {
		stopping := false
		select {
		case <-d.signal:
		case <-d.stop:
			stopping = true
		}
		batch = d.take(spare, stopping)

		var msgs, bytes int64
		d.inside.Store(true)
		for i, f := range batch {
			batch[i] = nil
			if i+1 < len(batch) {
				d.c.prefetch(batch[i+1])
			}
			if f.barrier != nil {
				d.barriers = append(d.barriers, f.barrier)
				continue
			}
			pt := f.part
			if f.seq != pt.next {
				if pt.held == nil {
					pt.held = make(map[uint64]*inflight)
				}
				pt.held[f.seq] = f
				continue
			}
			for f != nil {
				d.report(f, &msgs, &bytes)
				pt.next++
				if f = pt.held[pt.next]; f != nil {
					delete(pt.held, pt.next)
				}
			}
		}
		if stopping {
			// Close swept every message, so nothing is missing but
			// outcomes a late sender raced in: report what is held, in
			// order, rather than wait for them.
			for _, pt := range d.c.parts {
				for _, seq := range slices.Sorted(maps.Keys(pt.held)) {
					d.report(pt.held[seq], &msgs, &bytes)
				}
				pt.held = nil
			}
		}
		d.inside.Store(false)
		for _, pt := range d.c.parts {
			if w := pt.next - 1; w != pt.reported.Load() {
				pt.reported.Store(w)
			}
		}
		if msgs > 0 {
			d.c.budget.release(msgs, bytes)
		}
		d.passBarriers(stopping)
		spare = batch
		if stopping {
			return
		}
	}
}

// report runs f's callback and counts what it held of the budget. f is
// reported in its partition's order unless the dispatcher is stopping.
func (d *dispatcher) report(f *inflight, msgs, bytes *int64) {
	if f.accepted {
		*msgs++
		*bytes += f.cost
	}
	inOrder := f.seq == f.part.next
	d.c.report(f)
	f.done(inOrder)
}

// deliver reports f at once, after the callback goroutine has stopped.
func (d *dispatcher) deliver(f *inflight) {
	accepted, n := f.accepted, f.cost
	d.c.report(f)
	f.done(false)
	if accepted {
		d.c.budget.release(1, n)
	}
}

// passBarriers closes the barriers whose messages have all been reported
// (all of them when the dispatcher stops).
func (d *dispatcher) passBarriers(all bool) {
	kept := d.barriers[:0]
	for _, b := range d.barriers {
		passed := true
		for i, pt := range d.c.parts {
			if pt.next <= b.upTo[i] {
				passed = false
				break
			}
		}
		if passed || all {
			close(b.done)
		} else {
			kept = append(kept, b)
		}
	}
	clear(d.barriers[len(kept):])
	d.barriers = kept
}

// barrier returns a channel that is closed once every message handed over
// to the cluster before the call has been reported.
func (d *dispatcher) barrier() <-chan struct{} {
	b := &barrier{upTo: make([]uint64, len(d.c.parts)), done: make(chan struct{})}
	for i, pt := range d.c.parts {
		b.upTo[i] = pt.lastSeq()
	}
	d.push(&inflight{barrier: b}, true)
	return b.done
}

// close reports what is queued and stops the goroutine; it waits for it.
func (d *dispatcher) close() {
	close(d.stop)
	<-d.done
	d.straggle.Stop()
}

// onCallbackGoroutine reports whether the calling goroutine is one of ps's
// callback goroutines, running a callback. Reading the goroutine's id costs
// about a microsecond, so it is read only while some callback is running.
func (p *Producer) onCallbackGoroutine() bool {
	var id uint64
	for _, c := range p.clusters {
		if !c.disp.inside.Load() {
			continue
		}
		if id == 0 {
			id = goid()
		}
		if id == c.disp.goid {
			return true
		}
	}
	return false
}

// goid returns the id of the calling goroutine, from the first line of its
// stack trace ("goroutine 42 [running]:").
func goid() uint64 {
	var buf [32]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	var id uint64
	for _, ch := range b[len(prefix):] {
		if ch < '0' || ch > '9' {
			break
		}
		id = id*10 + uint64(ch-'0')
	}
	return id
}
