package main

import (
	"context"

	"github.com/keyroute/keyroute/producer"
)

// target hands messages to one producer (the SDK or raw pulsar-client-go).
// send hands over the message with key index k for sender s, counting it
// with rec.addSent just before the hand-over; start is the recorder time
// to measure latency from, or -1 for "now, at the hand-over". It returns
// false when the message was not handed over because ctx ended.
type target interface {
	send(ctx context.Context, s, k int, start int64) bool
}

// load is what every target needs: the keys, where each key goes, the
// payload shared by every message and the recorder.
type load struct {
	keys    []string
	place   []int // cluster index (recorder order) of each key
	payload []byte
	rec     *recorder
}

func (l *load) startTime(start int64) int64 {
	if start < 0 {
		return l.rec.now()
	}
	return start
}

// sdkSlot is one reusable in-flight message of the async SDK target: the
// message, its routing and start time, and a callback made once. A slot is
// owned by the sender from taking it off the free list until the hand-over,
// then by the producer until its callback puts it back.
type sdkSlot struct {
	msg     producer.Message
	cluster int
	start   int64
	cb      producer.Callback
}

// sdkAsync sends with producer.SendAsync, one reused slot per in-flight
// message, so the generator itself allocates nothing per message.
type sdkAsync struct {
	*load
	p    *producer.Producer
	free chan *sdkSlot
}

func newSDKAsync(l *load, p *producer.Producer, slots int) *sdkAsync {
	t := &sdkAsync{load: l, p: p, free: make(chan *sdkSlot, slots)}
	for range slots {
		s := &sdkSlot{msg: producer.Message{Value: l.payload}}
		s.cb = func(_ producer.ID, _ *producer.Message, err error) {
			t.rec.done(s.cluster, s.start, err)
			t.free <- s // never blocks: the channel holds every slot
		}
		t.free <- s
	}
	return t
}

func (t *sdkAsync) send(ctx context.Context, sender, k int, start int64) bool {
	var s *sdkSlot
	select {
	case s = <-t.free:
	case <-ctx.Done():
		return false
	}
	s.msg.Key = t.keys[k]
	s.cluster = t.place[k]
	s.start = t.startTime(start)
	t.rec.addSent(sender)
	t.p.SendAsync(ctx, &s.msg, s.cb)
	return true
}

// sdkSync sends with producer.Send, one message at a time per sender.
type sdkSync struct {
	*load
	p    *producer.Producer
	msgs []producer.Message // one per sender
}

func newSDKSync(l *load, p *producer.Producer, senders int) *sdkSync {
	t := &sdkSync{load: l, p: p, msgs: make([]producer.Message, senders)}
	for i := range t.msgs {
		t.msgs[i].Value = l.payload
	}
	return t
}

func (t *sdkSync) send(ctx context.Context, sender, k int, start int64) bool {
	m := &t.msgs[sender]
	m.Key = t.keys[k]
	st := t.startTime(start)
	t.rec.addSent(sender)
	_, err := t.p.Send(ctx, m)
	t.rec.done(t.place[k], st, err)
	return true
}
