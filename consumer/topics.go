package consumer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/topology"
)

// Several topics (the Topics option). The Consumer holds one Consumer per
// topic (subs), each the Consumer of that topic alone: its clusters, its
// hand-over, growth, seeks and counters are its own. Each hands its
// messages over through Chan (its own goroutine takes them, with the
// hand-over's holds and the seek rules applied), and this Consumer merges
// those channels, the topics taking turns as the clusters do within one.
//
// Seeks keep their rule across the two levels: a take here holds this
// Consumer's gate, shared, from reading the seek state until the message
// is out of a topic's channel; a seek takes the gate alone (pauseTakes)
// before it seeks the topics' Consumers, which drop what their own
// goroutines hold from before. A message that Chan's goroutine here holds
// when a seek moving its cluster begins is dropped (offer).

// newTopics is New for several topics: a Consumer per topic, made in
// parallel, each with its share of MaxBuffered and the StartAfter IDs of
// its topic. When one fails, the others are closed and the error names
// the topic.
func newTopics(ctx context.Context, topo *topology.Topology, c cfg) (*Consumer, error) {
	n := len(c.topics)
	subs := make([]*Consumer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, t := range c.topics {
		sc := c
		sc.topic, sc.topics, sc.topicsSet, sc.idTopic = t, nil, false, t
		sc.maxBuffered = max(1, c.maxBuffered/n)
		sc.startAfter = nil
		for _, id := range c.startAfter {
			if id.Topic == t {
				sc.startAfter = append(sc.startAfter, id)
			}
		}
		sc.skip = newSkipper()
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub, err := newConsumer(ctx, topo, sc)
			if err != nil {
				err = fmt.Errorf("topic %q: %w", t, err)
			}
			subs[i], errs[i] = sub, err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range subs {
			if s != nil {
				_ = s.Close(ctx)
			}
		}
		return nil, err
	}
	co := &Consumer{cfg: c, subs: subs, closing: make(chan struct{}), closeDone: make(chan struct{})}
	co.state.Store(&pause{begin: make(chan struct{})})
	for _, s := range subs {
		co.ins = append(co.ins, s.Chan())
	}
	return co, nil
}

// sub returns the Consumer of topic t.
func (c *Consumer) sub(t string, op string, cluster string) (*Consumer, error) {
	if c.closed.Load() {
		return nil, clusterErr(cluster, op, ErrClosed)
	}
	for _, s := range c.subs {
		if s.cfg.topic == t {
			return s, nil
		}
	}
	return nil, clusterErr(cluster, op, fmt.Errorf("%w: %q (it reads %q)", ErrUnknownTopic, t, c.cfg.topics))
}

// subOf returns the Consumer of the topic m was read from.
func (c *Consumer) subOf(m *Message, op string) (*Consumer, error) {
	if m.k != nil && slices.Contains(c.subs, m.k.owner) && !c.closed.Load() {
		return m.k.owner, nil
	}
	return c.sub(m.ID.Topic, op, m.ID.Cluster)
}

// pollTopics takes a message that a topic's channel holds, the topics
// taking turns from the rotor; ok is false when every channel is empty.
// A closed channel (its Consumer was closed) is ErrClosed.
func (c *Consumer) pollTopics() (m *Message, ok bool, err error) {
	n := uint32(len(c.ins))
	start := c.rotor.Load()
	for i := range n {
		j := (start + i) % n
		select {
		case m, open := <-c.ins[j]:
			if !open {
				return nil, false, ErrClosed
			}
			c.rotor.Store(j + 1)
			return m, true, nil
		default:
		}
	}
	return nil, false, nil
}

// takeTopics takes one message under the gate, held shared with seek
// state p: one a topic's channel holds, else the first to come. It
// returns errSeekBegun when a seek begins first. A wait is a
// reflect.Select over the topics' channels, which allocates: it is taken
// only when every channel is empty.
func (c *Consumer) takeTopics(ctx context.Context, p *pause) (*Message, error) {
	if m, ok, err := c.pollTopics(); ok || err != nil {
		return m, err
	}
	n := len(c.ins)
	cases := make([]reflect.SelectCase, n, n+3)
	for i, in := range c.ins {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(in)}
	}
	for _, ch := range []<-chan struct{}{ctx.Done(), c.closing, p.begin} {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	i, v, ok := reflect.Select(cases)
	switch {
	case i < n && ok:
		c.rotor.Store(uint32(i) + 1)
		return v.Interface().(*Message), nil
	case i < n, i == n+1:
		return nil, ErrClosed
	case i == n:
		return nil, ctx.Err()
	}
	return nil, errSeekBegun
}

// firstTopics enters the gate and takes one message; on success the
// gate is still held (the caller releases it).
func (c *Consumer) firstTopics(ctx context.Context) (*Message, *pause, error) {
	for {
		p, err := c.enter(ctx)
		if err != nil {
			return nil, nil, err
		}
		m, err := c.takeTopics(ctx, p)
		if err == nil {
			return m, p, nil
		}
		c.gate.RUnlock()
		if err != errSeekBegun {
			return nil, nil, err
		}
	}
}

// receiveTopics is Receive over several topics.
func (c *Consumer) receiveTopics(ctx context.Context) (*Message, error) {
	m, _, err := c.firstTopics(ctx)
	if err != nil {
		return nil, err
	}
	c.gate.RUnlock()
	return m, nil
}

// receiveIntoTopics is ReceiveBatch and ReceiveInto over several topics:
// it waits for one message, then adds those the topics' channels hold,
// up to max, appended to buf when room is nil, else written into room.
func (c *Consumer) receiveIntoTopics(ctx context.Context, room []Message, max int) ([]Message, int, error) {
	m, _, err := c.firstTopics(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer c.gate.RUnlock()
	var out []Message
	put := func(i int, m *Message) {
		if room != nil {
			room[i] = *m
		} else {
			out = append(out, *m)
		}
	}
	put(0, m)
	n := 1
	for ; n < max; n++ {
		m, ok, err := c.pollTopics()
		if !ok || err != nil {
			break
		}
		put(n, m)
	}
	return out, n, nil
}

// feedTopics is Chan's goroutine over several topics.
func (c *Consumer) feedTopics(out chan *Message) {
	defer c.bg.Done()
	defer close(out)
	for {
		m, p, err := c.firstTopics(context.Background()) // Close ends the waits
		if err != nil {
			return
		}
		c.gate.RUnlock()
		if !c.offer(out, m, m.k, p) {
			return
		}
	}
}

// eachTopic runs fn on every topic's Consumer in parallel and joins the
// errors, each naming its topic.
func (c *Consumer) eachTopic(fn func(s *Consumer) error) error {
	errs := make([]error, len(c.subs))
	var wg sync.WaitGroup
	for i, s := range c.subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(s); err != nil {
				errs[i] = fmt.Errorf("topic %q: %w", s.cfg.topic, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// updateTopics is Update over several topics: the topics' Consumers take
// topo in parallel, and when one refuses it, those that took it are put
// back on the topology each had (a cluster added is removed again, and
// drains as any removed; one reconnected goes back to its old settings).
// Putting back waits for a reconnected cluster as Update does, at most
// StartTimeout, even once ctx has ended: a change that some topics keep
// and others not is worse than a late error. The error names each topic
// that refused, and each that could not be put back.
func (c *Consumer) updateTopics(ctx context.Context, topo *topology.Topology) error {
	c.updateMu.Lock()
	defer c.updateMu.Unlock()
	olds := make(map[*Consumer]*topology.Topology, len(c.subs))
	for _, s := range c.subs {
		olds[s] = s.topology()
	}
	var mu sync.Mutex
	var took []*Consumer
	err := c.eachTopic(func(s *Consumer) error {
		if err := s.Update(ctx, topo); err != nil {
			return err
		}
		mu.Lock()
		took = append(took, s)
		mu.Unlock()
		return nil
	})
	if err == nil {
		return nil
	}
	back := context.WithoutCancel(ctx)
	undone := c.eachTopic(func(s *Consumer) error {
		if !slices.Contains(took, s) {
			return nil
		}
		if err := s.update(back, olds[s]); err != nil {
			return fmt.Errorf("took the new topology and could not be put back: %w", err)
		}
		return nil
	})
	return errors.Join(err, undone)
}

// topology returns the topology c's clusters were last given: its
// members that no Update removed, in order.
func (c *Consumer) topology() *topology.Topology {
	t := &topology.Topology{}
	for _, m := range c.set.Load().members {
		if !m.removed.Load() {
			m.jmu.Lock()
			t.Clusters = append(t.Clusters, m.cl)
			m.jmu.Unlock()
		}
	}
	return t
}

// seekByTimeTopics is SeekByTime over several topics.
func (c *Consumer) seekByTimeTopics(ctx context.Context, t time.Time) error {
	c.seekMu.Lock()
	defer c.seekMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	defer c.pauseTakes(nil)()
	return c.eachTopic(func(s *Consumer) error { return s.SeekByTime(ctx, t) })
}

// seekByIDTopics is SeekByID over several topics: every ID names its
// topic (ErrBadPosition otherwise). Each topic's IDs are checked before
// that topic moves.
func (c *Consumer) seekByIDTopics(ctx context.Context, ids []ID) error {
	by := map[*Consumer][]ID{}
	for _, id := range ids {
		s, err := c.sub(id.Topic, "seek", id.Cluster)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadPosition, err)
		}
		by[s] = append(by[s], id)
	}
	if len(by) == 0 {
		return nil
	}
	c.seekMu.Lock()
	defer c.seekMu.Unlock()
	moves := map[*member]bool{}
	for s, ids := range by {
		for _, m := range s.set.Load().members {
			for _, id := range ids {
				if m.name == id.Cluster {
					moves[m] = true
				}
			}
		}
	}
	defer c.pauseTakes(moves)()
	return c.eachTopic(func(s *Consumer) error {
		if ids := by[s]; len(ids) > 0 {
			return s.SeekByID(ctx, ids...)
		}
		return nil
	})
}

// healthTopics is Health over several topics: each topic's rows, in the
// order of Topics.
func (c *Consumer) healthTopics(ctx context.Context) []ClusterHealth {
	hs := make([][]ClusterHealth, len(c.subs))
	_ = c.eachTopic(func(s *Consumer) error {
		hs[slices.Index(c.subs, s)] = s.Health(ctx)
		return nil
	})
	return slices.Concat(hs...)
}

// closeTopics is Close over several topics.
func (c *Consumer) closeTopics(ctx context.Context) error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed.Store(true)
		if c.out == nil {
			c.out = make(chan *Message)
			close(c.out)
		}
		c.mu.Unlock()
		close(c.closing)
		c.bg.Wait()
		go func() {
			defer close(c.closeDone)
			_ = c.eachTopic(func(s *Consumer) error { return s.Close(context.Background()) })
		}()
	})
	select {
	case <-c.closeDone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("consumer: Close: the topics' consumers are still closing: %w", ctx.Err())
	}
}

// txnAckTopics is TxnAck over several topics.
func (c *Consumer) txnAckTopics(m *Message) (keyroute.TxnAck, error) {
	s, err := c.subOf(m, "ack in transaction")
	if err != nil {
		return nil, err
	}
	return s.TxnAck(m)
}
