package producer

import (
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// straggleDelay bounds how long an outcome can wait in the queue for the
// rest of its batch (see push).
const straggleDelay = time.Millisecond

// dispatcher runs one cluster's callbacks on its own goroutine, in the order
// the outcomes were pushed, so that callbacks never run on pulsar-client-go's
// connection goroutines. push never blocks for longer than a mutex hold: the
// queue is bounded by the cluster's budget, which a message holds until its
// callback has returned.
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
}

func newDispatcher(c *cluster) *dispatcher {
	d := &dispatcher{
		c:      c,
		signal: make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	d.straggle = time.AfterFunc(time.Hour, d.wake)
	d.straggle.Stop()
	go d.run()
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
// last is true, else within straggleDelay. After close, push runs f inline.
func (d *dispatcher) push(f *inflight, last bool) {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		if f.barrier != nil {
			close(f.barrier)
			return
		}
		d.c.report(f)
		d.c.budget.release(1, f.cost)
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

func (d *dispatcher) run() {
	defer close(d.done)
	var spare []*inflight
	for {
		stopping := false
		select {
		case <-d.signal:
		case <-d.stop:
			stopping = true
		}
		d.mu.Lock()
		batch := d.queue
		d.queue = spare[:0]
		if d.armed {
			d.armed = false
			d.straggle.Stop()
		}
		if stopping {
			d.stopped = true
		}
		d.mu.Unlock()

		var msgs, bytes int64
		for i, f := range batch {
			batch[i] = nil
			if f.barrier != nil {
				close(f.barrier)
				continue
			}
			d.c.report(f)
			msgs++
			bytes += f.cost
		}
		if msgs > 0 {
			d.c.budget.release(msgs, bytes)
		}
		spare = batch
		if stopping {
			return
		}
	}
}

// barrier returns a channel that is closed once every outcome pushed before
// it has been reported.
func (d *dispatcher) barrier() <-chan struct{} {
	ch := make(chan struct{})
	d.push(&inflight{barrier: ch}, true)
	return ch
}

// close reports what is queued and stops the goroutine; it waits for it.
func (d *dispatcher) close() {
	close(d.stop)
	<-d.done
	d.straggle.Stop()
}
