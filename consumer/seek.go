package consumer

import (
	"context"
	"errors"
	"sync"
	"time"
)

// pause is the seek state, replaced (never changed) at each step of a
// seek and read by takes under the gate:
//
//   - between seeks, seeking is false and begin is open; the seek that
//     comes next closes it, which ends the waits of takes in progress and
//     tells Chan's goroutine to drop the message it holds when the seek
//     moves its cluster (it was read before the seek);
//   - during a seek, seeking is true and done is closed when the seek
//     ends; takes wait for it, or for their ctx.
//
// A seek stores its state before it closes the previous begin and then
// takes the gate alone: a take that read the old state under the gate
// has its begin closed, one that reads the new state waits, so no
// message is taken while pulsar-client-go seeks, and every message taken
// before is either handed over already or dropped.
//
// A seek may move some clusters only (SeekByID): moves names them, nil
// for every cluster. next is the state that replaced this one, set before
// begin (or done) is closed, so that a goroutine woken by either can
// follow each step (see offer).
type pause struct {
	seeking bool
	begin   chan struct{}
	done    chan struct{}
	moves   map[*member]bool
	next    *pause
}

// keeps reports whether a seek that p begins leaves the messages of k
// where they are: it moves other clusters only.
func (p *pause) keeps(k *cluster) bool { return p.moves != nil && !p.moves[k.member] }

// pauseTakes begins a seek of the clusters moves names (nil: every
// cluster): it waits until no take is in progress and stops new ones.
// The caller holds seekMu, and calls resume to let the takes go on.
func (c *Consumer) pauseTakes(moves map[*member]bool) (resume func()) {
	p := &pause{seeking: true, done: make(chan struct{}), moves: moves}
	old := c.state.Swap(p)
	old.next = p
	close(old.begin)
	c.gate.Lock()
	return func() {
		open := &pause{begin: make(chan struct{})}
		c.state.Store(open)
		p.next = open
		c.gate.Unlock()
		close(p.done)
	}
}

// offer hands m, taken from k under the seek state p, to Chan's channel
// out, and returns false when Close begins first. A seek that begins
// meanwhile and moves k's cluster drops m: it was read before the seek,
// and comes again from the new position if it is after it. A seek of
// other clusters leaves m to be handed over.
func (c *Consumer) offer(out chan<- *Message, m *Message, k *cluster, p *pause) bool {
	for {
		select {
		case out <- m:
			if c.subs == nil { // with Topics, the topic's Consumer counted it
				c.delivered(k, m)
			}
			return true
		case <-p.begin: // nil while p is a seek
		case <-p.done: // nil while p is not
		case <-c.closing:
			return false
		}
		if p = p.next; p.seeking && !p.keeps(k) {
			return true
		}
	}
}

// SeekByTime moves the subscription on every cluster, in parallel, to the
// first message published at or after t: messages after it come again,
// earlier ones are skipped. pulsar-client-go drops the messages it read
// before the seek, and no message is taken while it seeks, so the next
// message of a cluster taken after SeekByTime returns is one of the new
// position (a Receive running across the call may return one taken
// before it). ctx bounds only the wait for the gate; pulsar-client-go's
// seek itself is bounded by each cluster's operation timeout. Errors name
// each cluster that failed (*ClusterError, joined), among them each that
// is not subscribed (ErrConnect: it joins later from its cursor, not
// moved); the others have moved.
func (c *Consumer) SeekByTime(ctx context.Context, t time.Time) error {
	if c == nil || c.closed.Load() {
		return ErrClosed
	}
	if c.subs != nil {
		return c.seekByTimeTopics(ctx, t)
	}
	c.seekMu.Lock()
	defer c.seekMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	defer c.pauseTakes(nil)()
	c.hold.reset() // what was held comes again from the new position
	set := c.set.Load()
	errs := make([]error, len(set.members))
	var wg sync.WaitGroup
	for i, m := range set.members {
		k := m.cur.Load()
		if k == nil {
			errs[i] = clusterErr(m.name, "seek", errNotConnected)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = clusterErr(k.name, "seek", brokerError(k.seekByTime(t)))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// seekByTime seeks every part of k to t, in parallel.
func (k *cluster) seekByTime(t time.Time) error {
	ps := *k.parts.Load()
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.stream.SeekByTime(t)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
