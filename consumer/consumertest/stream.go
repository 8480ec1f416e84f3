package consumertest

import (
	"errors"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// stream is one Consumer's subscription on one cluster, as a
// pulsar-client-go consumer over every partition would be: a goroutine
// (dispatch) delivers the subscription's messages into ch, the
// partitions taking turns, each in order; nacked messages come again
// first, at once (the fake does not wait NackRedeliveryDelay).
type stream struct {
	c     *Cluster
	s     *subscription
	topic string
	ch    chan pulsar.ConsumerMessage

	wake  chan struct{} // capacity 1: something may be there to deliver
	seeks chan seekReq  // SeekByTime's requests, served by dispatch
	gone  chan struct{} // closed by Close
	ended chan struct{} // closed when dispatch returns

	// Guarded by cs.mu.
	next   []int64 // by partition: the next entry to consider
	redo   []*delivery
	turn   int // the partition to try first
	closed bool
}

type seekReq struct {
	t    time.Time
	done chan struct{}
}

func newStream(c *Cluster, s *subscription, topic string, queue int) *stream {
	return &stream{
		c: c, s: s, topic: topic, ch: make(chan pulsar.ConsumerMessage, queue),
		wake: make(chan struct{}, 1), seeks: make(chan seekReq), gone: make(chan struct{}), ended: make(chan struct{}),
		next: make([]int64, len(c.logs)),
	}
}

func (st *stream) poke() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// dispatch delivers until Close.
func (st *stream) dispatch() {
	defer close(st.ended)
	for {
		st.c.cs.mu.Lock()
		d := st.pickLocked()
		st.c.cs.mu.Unlock()
		if d == nil {
			select {
			case <-st.wake:
			case r := <-st.seeks:
				st.seek(r)
			case <-st.gone:
				return
			}
			continue
		}
		select {
		case st.ch <- pulsar.ConsumerMessage{Message: d}:
		case r := <-st.seeks:
			st.seek(r) // d was picked before the seek: it is not delivered
		case <-st.gone:
			return
		}
	}
}

// pickLocked returns the next message to deliver, nil when there is none
// (or the cluster is stalled); cs.mu is held.
func (st *stream) pickLocked() *delivery {
	if st.c.stalled {
		return nil
	}
	for len(st.redo) > 0 {
		d := st.redo[0]
		st.redo = st.redo[1:]
		p, e := pos(d.id)
		if !st.s.isAcked(p, e) {
			return d
		}
	}
	n := len(st.c.logs)
	for i := range n {
		p := (st.turn + i) % n
		log := st.c.logs[p]
		for st.next[p] < int64(len(log)) && st.s.isAcked(p, st.next[p]) {
			st.next[p]++
		}
		if st.next[p] < int64(len(log)) {
			e := st.next[p]
			st.next[p]++
			st.turn = p + 1
			return &delivery{stored: log[e], topic: st.topic, count: st.s.count[[2]int64{int64(p), e}]}
		}
	}
	return nil
}

// seek moves the subscription to the first message published at or after
// r.t on every partition, drops what was delivered but not taken, and
// answers r. It runs on dispatch's goroutine, so nothing is delivered
// meanwhile.
func (st *stream) seek(r seekReq) {
	cs := st.c.cs
	cs.mu.Lock()
	for p, log := range st.c.logs {
		st.s.acked[p] = st.s.acked[p][:0]
		for _, m := range log {
			st.s.acked[p] = append(st.s.acked[p], m.PublishTime.Before(r.t))
		}
		st.next[p] = 0
	}
	st.redo = nil
	cs.record(Event{Op: OpSeek, Cluster: st.c.name, Subscription: st.s.name, Partition: -1, Entry: -1, Time: r.t})
	cs.mu.Unlock()
	for len(st.ch) > 0 {
		<-st.ch
	}
	close(r.done)
}

// pos returns the partition and entry of a fake message ID.
func pos(id pulsar.MessageID) (int, int64) { return int(id.PartitionIdx()), id.EntryID() }

// errUnknownID is returned for an acknowledgement of a message the
// cluster does not have.
var errUnknownID = errors.New("consumertest: no such message on the cluster")

// settle records an acknowledgement or nack of id.
func (st *stream) settle(op Op, id pulsar.MessageID) error {
	cs := st.c.cs
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if st.closed {
		return ErrStreamClosed
	}
	p, e := pos(id)
	if id == nil || p < 0 || p >= len(st.c.logs) || e < 0 || e >= int64(len(st.c.logs[p])) {
		return errUnknownID
	}
	if op != OpNack && st.c.ackErr != nil {
		return st.c.ackErr
	}
	switch op {
	case OpAck:
		st.s.ack(p, e)
	case OpAckCumulative:
		for i := int64(0); i <= e; i++ {
			st.s.ack(p, i)
		}
	case OpNack:
		k := [2]int64{int64(p), e}
		st.s.count[k]++
		st.redo = append(st.redo, &delivery{stored: st.c.logs[p][e], topic: st.topic, count: st.s.count[k]})
		st.poke()
	}
	cs.record(Event{Op: op, Cluster: st.c.name, Subscription: st.s.name, Partition: p, Entry: e})
	return nil
}

func (st *stream) Chan() <-chan pulsar.ConsumerMessage       { return st.ch }
func (st *stream) Ack(m pulsar.Message) error                { return st.settle(OpAck, m.ID()) }
func (st *stream) AckID(id pulsar.MessageID) error           { return st.settle(OpAck, id) }
func (st *stream) AckCumulative(m pulsar.Message) error      { return st.settle(OpAckCumulative, m.ID()) }
func (st *stream) AckIDCumulative(id pulsar.MessageID) error { return st.settle(OpAckCumulative, id) }
func (st *stream) Nack(m pulsar.Message)                     { _ = st.settle(OpNack, m.ID()) }
func (st *stream) NackID(id pulsar.MessageID)                { _ = st.settle(OpNack, id) }

// SeekByTime moves the subscription (see seek).
func (st *stream) SeekByTime(t time.Time) error {
	r := seekReq{t: t, done: make(chan struct{})}
	select {
	case st.seeks <- r:
	case <-st.gone:
		return ErrStreamClosed
	}
	<-r.done
	return nil
}

// Close ends the stream: the subscription keeps what was acknowledged,
// and a Consumer that subscribes again gets the rest.
func (st *stream) Close() {
	cs := st.c.cs
	cs.mu.Lock()
	if st.closed {
		cs.mu.Unlock()
		return
	}
	st.closed = true
	st.s.open = nil
	cs.record(Event{Op: OpClose, Cluster: st.c.name, Subscription: st.s.name, Partition: -1, Entry: -1})
	cs.mu.Unlock()
	close(st.gone)
	<-st.ended
}
