package producer

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// straggleDelay bounds how long a completed message can wait for the rest
// of its burst before the callback goroutine looks (see settled).
const straggleDelay = time.Millisecond

// dispatcher is one cluster's callback goroutine: the one serial path
// through which every outcome (SendAsync's, and Send's own) reaches the
// caller and the observer. Outcomes are fixed in any order: on
// pulsar-client-go's goroutines, on senders whose message failed before it
// reached a writer, on Close's. Each is fixed in its inflight, which sits
// in its partition's ring at its number (see ring), and the dispatcher
// walks each partition's ring in that order, reporting the messages while
// they are completed; one completed early waits in its slot for those
// before it. So a key's callbacks run in call order, failures before
// acceptance included. Fixing an outcome never waits for the callback
// goroutine, and queues nothing: it wakes the goroutine at most.
//
// pulsar-client-go reports a batch's acks one after the other on one
// goroutine, doing a few hundred nanoseconds of its own work between them;
// the callback goroutine reports an outcome in less and would park again,
// so waking it at each outcome meant up to one wake-up per message.
// settled therefore wakes it at the end of each burst, and a timer wakes
// it for outcomes whose burst does not end (a batch-mate failed or timed
// out before its ack came).
type dispatcher struct {
	c *cluster

	armed    atomic.Bool // straggle is set; cleared when it fires
	straggle *time.Timer // wakes run for outcomes whose burst did not end

	signal chan struct{} // capacity 1: an outcome may be completed
	stop   chan struct{} // closed by close: report what is completed and exit
	done   chan struct{} // closed when run returns

	mu      sync.Mutex // guards added and stopped
	added   []*barrier // Flush barriers not yet seen by run
	stopped bool

	onSettling func(*inflight) // test hook: drain found f settling; nil

	goid uint64 // of the goroutine that runs callbacks; set before run starts

	// inside is set while run reports a batch of outcomes that holds a
	// SendAsync caller's callback (inflight.userCB), from that message on,
	// so that only then does a call that could wait for this goroutine
	// read its own goroutine's id (see onCallbackGoroutine). Outcomes of
	// Send and of messages without a callback run no user code: reporting
	// them leaves it unset. calling is run's own copy.
	inside  atomic.Bool
	calling bool

	barriers []*barrier // Flush barriers not yet passed; owned by run
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
	d.straggle = time.AfterFunc(time.Hour, func() {
		d.armed.Store(false)
		d.wake()
	})
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

// settled tells the callback goroutine that an outcome was completed: it
// wakes it now when last is true, else within straggleDelay. A completion
// that finds the timer set is seen when it fires, as the timer clears
// armed before it wakes run.
func (d *dispatcher) settled(last bool) {
	if last {
		d.wake()
		return
	}
	if !d.armed.Load() && d.armed.CompareAndSwap(false, true) {
		d.straggle.Reset(straggleDelay)
	}
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		stopping := false
		select {
		case <-d.signal:
		case <-d.stop:
			stopping = true
		}
		var msgs, bytes int64
		for _, pt := range d.c.parts {
			if stopping {
				d.drain(pt, &msgs, &bytes)
			} else {
				d.walk(pt, &msgs, &bytes)
			}
		}
		if d.calling {
			d.calling = false
			d.inside.Store(false)
		}
		for _, pt := range d.c.parts {
			if w := pt.next - 1; w != pt.reported.Load() {
				pt.reported.Store(w)
			}
		}
		if msgs > 0 {
			d.c.budget.release(msgs, bytes)
		}
		d.mu.Lock()
		d.barriers = append(d.barriers, d.added...)
		clear(d.added)
		d.added = d.added[:0]
		d.stopped = stopping
		d.mu.Unlock()
		d.passBarriers(stopping)
		if stopping {
			return
		}
	}
}

// walk reports pt's messages in order from next while they are completed,
// up to the last one placed when it starts. It reads the ring after
// placed, so the ring it reads holds every message up to there: a ring
// grown later holds them too, and it is published before any message is
// placed in it alone.
func (d *dispatcher) walk(pt *partition, msgs, bytes *int64) {
	if pt.gate != nil {
		select {
		case <-pt.gate:
			pt.gate = nil
		default:
			return // see partition.gate
		}
	}
	last := pt.placed.Load()
	if pt.next > last {
		return
	}
	r := pt.ring.Load()
	for f := r.at(pt.next); f.state.Load() == pt.next<<phaseBits|completed; f = r.at(pt.next) {
		d.report(f, msgs, bytes)
		if pt.next++; pt.next > last {
			return
		}
	}
}

// drain is walk for the last time: Close has swept every message, so each
// one in the ring is completed, or settling where an ack won the race with
// the sweep (pulsar-client-go may be calling back for a receipt it took
// before its producer closed). A settling message is completed a few
// instructions later, with nothing between that blocks, so drain waits
// for it. Refusals after drain are reported at once (see refuse).
func (d *dispatcher) drain(pt *partition, msgs, bytes *int64) {
	last := pt.stop()
	r := pt.ring.Load()
	for ; pt.next <= last; pt.next++ {
		f := r.at(pt.next)
		st := f.state.Load()
		for st == pt.next<<phaseBits|settling {
			if d.onSettling != nil {
				d.onSettling(f)
			}
			runtime.Gosched()
			st = f.state.Load()
		}
		if st == pt.next<<phaseBits|completed {
			d.report(f, msgs, bytes)
		}
	}
}

// report runs f's callback, counts what it held of the budget and clears
// it.
func (d *dispatcher) report(f *inflight, msgs, bytes *int64) {
	if f.userCB && !d.calling {
		d.calling = true
		d.inside.Store(true)
	}
	if f.accepted {
		*msgs++
		*bytes += f.cost
	}
	d.c.report(f)
	f.clear()
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
		b.upTo[i] = pt.placed.Load()
	}
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		close(b.done)
		return b.done
	}
	d.added = append(d.added, b)
	d.mu.Unlock()
	d.wake()
	return b.done
}

// close reports what is completed and stops the goroutine; it waits for it.
func (d *dispatcher) close() {
	close(d.stop)
	<-d.done
	d.straggle.Stop()
}

// onCallbackGoroutine reports whether the calling goroutine is one of p's
// callback goroutines, running a callback. Reading the goroutine's id
// walks its stack, so it is read only while some cluster runs a SendAsync
// caller's callback (dispatcher.inside): a Producer whose SendAsync calls
// have no callback, or that only Sends, never reads it.
func (p *Producer) onCallbackGoroutine() bool {
	var id uint64
	for _, c := range p.all() {
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

// goidHook, when set (by tests, before the Producer starts), runs at each
// goid.
var goidHook func()

// goid returns the id of the calling goroutine, from the first line of its
// stack trace ("goroutine 42 [running]:").
func goid() uint64 {
	if goidHook != nil {
		goidHook()
	}
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
