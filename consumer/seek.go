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
//     tells Chan's goroutine to drop the message it holds (it was read
//     before the seek);
//   - during a seek, seeking is true and done is closed when the seek
//     ends; takes wait for it, or for their ctx.
//
// A seek stores its state before it closes the previous begin and then
// takes the gate alone: a take that read the old state under the gate
// has its begin closed, one that reads the new state waits, so no
// message is taken while pulsar-client-go seeks, and every message taken
// before is either handed over already or dropped.
type pause struct {
	seeking bool
	begin   chan struct{}
	done    chan struct{}
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
	c.seekMu.Lock()
	defer c.seekMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	p := &pause{seeking: true, done: make(chan struct{})}
	old := c.state.Swap(p)
	close(old.begin)
	c.gate.Lock()
	c.hold.reset() // what was held comes again from the new position
	defer func() {
		c.state.Store(&pause{begin: make(chan struct{})})
		c.gate.Unlock()
		close(p.done)
	}()
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
			errs[i] = clusterErr(k.name, "seek", brokerError(k.link.stream.SeekByTime(t)))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
