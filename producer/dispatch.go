package producer

import "sync"

// dispatcher runs one cluster's callbacks on its own goroutine, in the order
// the outcomes were pushed, so that callbacks never run on pulsar-client-go's
// connection goroutines. push never blocks for longer than a mutex hold: the
// queue is bounded by the cluster's budget, which a message holds until its
// callback has returned.
type dispatcher struct {
	c *cluster

	mu      sync.Mutex // guards queue and stopped
	queue   []*inflight
	stopped bool

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
	go d.run()
	return d
}

// push queues f for its callback. After close, push runs f inline.
func (d *dispatcher) push(f *inflight) {
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
	first := len(d.queue) == 1
	d.mu.Unlock()
	if first {
		select {
		case d.signal <- struct{}{}:
		default:
		}
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
	d.push(&inflight{barrier: ch})
	return ch
}

// close reports what is queued and stops the goroutine; it waits for it.
func (d *dispatcher) close() {
	close(d.stop)
	<-d.done
}
