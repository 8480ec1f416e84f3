package producertest

import "github.com/apache/pulsar-client-go/pulsar"

// Partition is one partition of the topic on a fake cluster. What it
// wrote stays when the Producers that wrote it close.
type Partition struct {
	c   *Cluster
	idx int

	// Guarded by c.cs.mu.
	msgs    []record  // in write order; none with KeepMessages(false)
	arena   []byte    // the Values of msgs
	entries int64     // broker entries written (a batch is one)
	failErr error     // FailSends
	writers []*writer // the open ones
}

// record is a written message.
type record struct {
	m   Message
	txn *txn // nil outside a transaction
}

// Ack acknowledges the messages the partition holds (see Cluster.Hold),
// in order, as one batch per writer; the partition goes on holding later
// messages. The writers' callbacks run before Ack returns.
func (p *Partition) Ack() { p.c.cs.settle(p.c, []*Partition{p}, 0, nil, false) }

// AckMissing acknowledges the messages the partition holds as Ack does,
// in batches that claim missing more messages than they hold, so that the
// end of each batch is never reported (as when a batch-mate failed
// first).
func (p *Partition) AckMissing(missing int) {
	p.c.cs.settle(p.c, []*Partition{p}, missing, nil, false)
}

// Fail reports the messages the partition holds failed with err (a send
// timeout, say), in order. They were written: a consumer reads them.
func (p *Partition) Fail(err error) { p.c.cs.settle(p.c, []*Partition{p}, 0, err, false) }

// ReportTwice acknowledges the oldest message the partition holds and then
// reports it again, failed with err, as a faulty client might; it does
// nothing when the partition holds no message.
func (p *Partition) ReportTwice(err error) {
	cs := p.c.cs
	ws := cs.lockWriters([]*Partition{p})
	var bs []batch
	for _, w := range ws {
		if len(w.held) > 0 {
			bs = cs.take([]*writer{w}, 1, 0, nil)
			break
		}
	}
	cs.mu.Unlock()
	cs.report(bs, nil)
	for _, b := range bs {
		b.es[0].cb(nil, b.es[0].pm, err)
	}
	unlockAll(ws)
}

// FailSends makes the partition refuse every message with err (nothing is
// written) until FailSends(nil).
func (p *Partition) FailSends(err error) { p.c.cs.locked(func() { p.failErr = err }) }

// Held returns how many messages the partition holds unacknowledged:
// held back (Cluster.Hold) or waiting for their batch (AsyncAcks).
func (p *Partition) Held() (n int) {
	p.c.cs.locked(func() {
		for _, w := range p.writers {
			n += len(w.held)
		}
	})
	return n
}

// Flushing returns how many flushes wait on the partition's writers (for
// the messages they hold to be reported).
func (p *Partition) Flushing() (n int) {
	p.c.cs.locked(func() {
		for _, w := range p.writers {
			n += w.flushes
		}
	})
	return n
}

// Messages returns what the partition wrote and a consumer would read, in
// write order: every message sent outside a transaction (acknowledged,
// held or failed after it was written), and the messages of committed
// transactions. A message it refused is not there, nor one of a
// transaction still open or aborted.
func (p *Partition) Messages() []Message {
	p.c.cs.mu.Lock()
	defer p.c.cs.mu.Unlock()
	var out []Message
	for _, r := range p.msgs {
		if r.txn == nil || r.txn.state == pulsar.TxnCommitted {
			out = append(out, r.m)
		}
	}
	return out
}

// Keys returns the keys of Messages, in the same order.
func (p *Partition) Keys() []string {
	var keys []string
	for _, m := range p.Messages() {
		keys = append(keys, m.Key)
	}
	return keys
}

// write records pm, sent in t (nil: none), and returns it as pending.
// Called with cs.mu held.
func (p *Partition) write(pm *pulsar.ProducerMessage, t *txn, conn int) pending {
	e := pending{rec: -1, pm: pm, txn: t, conn: conn}
	if p.c.cs.opt.forget {
		return e
	}
	p.log(OpSend, pm.Key, t, nil, conn)
	m := Message{Cluster: p.c.name, Partition: p.idx, Key: pm.Key, OrderingKey: pm.OrderingKey,
		Value: p.keep(pm.Payload), Properties: pm.Properties, EventTime: pm.EventTime, DeliverAfter: pm.DeliverAfter}
	if pm.DeliverAt.UnixNano() > 0 {
		m.DeliverAt = pm.DeliverAt
	}
	if t != nil {
		m.Txn = t.id
	}
	e.rec = len(p.msgs)
	p.msgs = append(p.msgs, record{m: m, txn: t})
	return e
}

// empty is the Value of an empty payload: not nil, which is a null value.
var empty = []byte{}

// keep copies a payload into the partition's arena: no allocation per
// message, and the caller may reuse its buffer once the message is
// reported.
func (p *Partition) keep(b []byte) []byte {
	switch {
	case b == nil:
		return nil
	case len(b) == 0:
		return empty
	}
	start := len(p.arena)
	p.arena = append(p.arena, b...)
	return p.arena[start:len(p.arena):len(p.arena)]
}

// stamp acknowledges es as one broker entry, a batch of missing more
// messages than es, and returns their IDs. Called with cs.mu held.
func (p *Partition) stamp(es []pending, missing int) []msgID {
	ids := make([]msgID, len(es))
	for i, e := range es {
		ids[i] = msgID{entry: p.entries, part: int32(p.idx), idx: int32(i), size: int32(len(es) + missing)}
		if e.rec >= 0 {
			p.msgs[e.rec].m.ID = &ids[i]
		}
		if e.txn != nil {
			e.txn.acked++
		}
		p.log(OpAck, e.pm.Key, e.txn, nil, e.conn)
	}
	p.entries++
	return ids
}

// log records a message event. Called with cs.mu held.
func (p *Partition) log(op Op, key string, t *txn, err error, conn int) {
	cs := p.c.cs
	if cs.opt.forget {
		return
	}
	ev := Event{Op: op, Cluster: p.c.name, Partition: p.idx, Key: key, Err: err, Conn: conn}
	if t != nil {
		ev.Txn = t.id
	}
	cs.events = append(cs.events, ev)
}
