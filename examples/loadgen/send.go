package main

import (
	"context"
	"errors"

	"github.com/keyroute/keyroute/producer"
)

// target hands messages to producers (the SDK or raw pulsar-client-go).
// send hands over the message with key index k (-1: no key) for sender s,
// counting it with rec.addSent just before the hand-over; due is when the
// pacer meant it to go (recorder clock), or -1 without a rate. It returns
// false when the message was not handed over because ctx ended.
type target interface {
	send(ctx context.Context, s, k int, due int64) bool
}

// load is what every target needs: the keys, where each key goes, the
// payloads, each sender's payload picker and the recorder.
type load struct {
	keys     []string
	place    []int // cluster index (recorder order) of each key
	pay      *payloads
	pick     []picker // one per sender
	rec      *recorder
	intended bool // measure latency from the due time (-intended)
}

// times returns, for a message handed over now, the time its latency is
// measured from and how late it is (-1 when unpaced). Publish latency
// runs from the hand-over as in OMB, or from the due time with -intended.
func (l *load) times(due int64) (start, delay int64) {
	now := l.rec.now()
	if due < 0 {
		return now, -1
	}
	delay = max(now-due, 0)
	if l.intended {
		return due, delay
	}
	return now, delay
}

// key returns the key and cluster index of key index k ("" and -1 for no
// key: the producer spreads keyless messages, the outcome names the
// cluster).
func (l *load) key(k int) (string, int) {
	if k < 0 {
		return "", -1
	}
	return l.keys[k], l.place[k]
}

// clusterOf returns the cluster index an outcome names: the ID's cluster,
// or the cluster of a *producer.SendError; -1 when neither says.
func (l *load) clusterOf(id producer.ID, err error) int {
	name := id.Cluster
	var se *producer.SendError
	if err != nil && errors.As(err, &se) {
		name = se.Cluster
	}
	if i, ok := l.rec.index[name]; ok {
		return i
	}
	return -1
}

// sdkSlot is one reusable in-flight message of the async SDK target: the
// message, its routing, start time and delay, its payload buffer (when
// payloads are stamped) and a callback made once. A slot is owned by the
// sender from taking it off the free list until the hand-over, then by the
// producer until its callback puts it back.
type sdkSlot struct {
	msg     producer.Message
	cluster int
	start   int64
	delay   int64
	buf     []byte
	cb      producer.Callback
}

// sdkAsync sends with producer.SendAsync, one reused slot per in-flight
// message, so the generator itself allocates nothing per message. Sender
// s sends through producers[s % len(producers)].
type sdkAsync struct {
	*load
	producers []*producer.Producer
	free      chan *sdkSlot
}

func newSDKAsync(l *load, ps []*producer.Producer, slots int) *sdkAsync {
	t := &sdkAsync{load: l, producers: ps, free: make(chan *sdkSlot, slots)}
	for range slots {
		s := &sdkSlot{}
		if l.pay.stamp {
			s.buf = make([]byte, l.pay.maxLen)
		}
		s.cb = func(id producer.ID, _ *producer.Message, err error) {
			c := s.cluster
			if c < 0 {
				c = t.clusterOf(id, err)
			}
			t.rec.done(c, s.start, s.delay, err)
			t.free <- s // never blocks: the channel holds every slot
		}
		t.free <- s
	}
	return t
}

func (t *sdkAsync) send(ctx context.Context, sender, k int, due int64) bool {
	start, delay := t.times(due) // before a free slot: waiting for one is publish latency, as in OMB
	var s *sdkSlot
	select {
	case s = <-t.free:
	case <-ctx.Done():
		return false
	}
	s.msg.Key, s.cluster = t.key(k)
	s.msg.Value = t.pay.fill(&t.pick[sender], s.buf)
	s.start, s.delay = start, delay
	t.rec.addSent(sender)
	t.producers[sender%len(t.producers)].SendAsync(ctx, &s.msg, s.cb)
	return true
}

// sdkSync sends with producer.Send, one message at a time per sender.
type sdkSync struct {
	*load
	producers []*producer.Producer
	msgs      []producer.Message // one per sender
	bufs      [][]byte           // one per sender, when stamping
}

func newSDKSync(l *load, ps []*producer.Producer, senders int) *sdkSync {
	t := &sdkSync{load: l, producers: ps, msgs: make([]producer.Message, senders), bufs: make([][]byte, senders)}
	if l.pay.stamp {
		for i := range t.bufs {
			t.bufs[i] = make([]byte, l.pay.maxLen)
		}
	}
	return t
}

func (t *sdkSync) send(ctx context.Context, sender, k int, due int64) bool {
	m := &t.msgs[sender]
	var c int
	m.Key, c = t.key(k)
	m.Value = t.pay.fill(&t.pick[sender], t.bufs[sender])
	st, delay := t.times(due)
	t.rec.addSent(sender)
	id, err := t.producers[sender%len(t.producers)].Send(ctx, m)
	if c < 0 {
		c = t.clusterOf(id, err)
	}
	t.rec.done(c, st, delay, err)
	return true
}
