package main

import (
	"context"
	"errors"
	"slices"

	"github.com/keyroute/keyroute/producer"
)

// sdkTxn sends in transactions of size messages: each sender stages
// messages in its own producer.Txn (BeginTxn, Txn.Send) and commits when
// the transaction is full, then starts the next. Latency is from staging a
// message to its transaction's commit. Messages of clusters that committed
// count as acknowledged; the others (and those of a failed commit) as
// failed.
type sdkTxn struct {
	*load
	p    *producer.Producer
	size int
	st   []txnSender // one per sender
	opts []producer.TxnOpt
}

// txnSender is one sender's open transaction, owned by that sender.
type txnSender struct {
	txn   *producer.Txn
	msgs  []producer.Message
	start []int64
	delay []int64
	place []int
	n     int
}

func newSDKTxn(l *load, p *producer.Producer, senders, size, msgSize int) *sdkTxn {
	t := &sdkTxn{load: l, p: p, size: size, st: make([]txnSender, senders),
		opts: []producer.TxnOpt{producer.TxnMaxMessages(size), producer.TxnMaxBytes(int64(size) * int64(msgSize+64))}}
	for i := range t.st {
		s := &t.st[i]
		s.msgs = make([]producer.Message, size)
		s.start = make([]int64, size)
		s.delay = make([]int64, size)
		s.place = make([]int, size)
	}
	return t
}

func (t *sdkTxn) send(ctx context.Context, sender, k int, due int64) bool {
	s := &t.st[sender]
	st, delay := t.times(due)
	key, c := t.key(k)
	t.rec.addSent(sender)
	if s.txn == nil {
		txn, err := t.p.BeginTxn(t.opts...)
		if err != nil {
			t.rec.done(c, st, delay, err)
			return true
		}
		s.txn = txn
	}
	m := &s.msgs[s.n]
	m.Key = key
	m.Value = t.pay.fill(&t.pick[sender], nil)
	if err := s.txn.Send(m); err != nil {
		t.rec.done(c, st, delay, err)
		return true
	}
	s.start[s.n], s.delay[s.n], s.place[s.n] = st, delay, c
	s.n++
	if s.n == t.size {
		t.commit(ctx, s)
	}
	return true
}

// commit commits s's transaction and records every staged message.
func (t *sdkTxn) commit(ctx context.Context, s *txnSender) {
	_, err := s.txn.Commit(ctx)
	var committed []string
	var partial *producer.PartialCommitError
	if errors.As(err, &partial) {
		committed = partial.Committed
	}
	for i := range s.n {
		e := err
		if partial != nil && slices.Contains(committed, t.rec.clusters[s.place[i]].name) {
			e = nil
		}
		t.rec.done(s.place[i], s.start[i], s.delay[i], e)
	}
	s.txn, s.n = nil, 0
}

// flushStaged commits the transactions the senders left open. Call it
// once the senders have stopped.
func (t *sdkTxn) flushStaged(ctx context.Context) {
	for i := range t.st {
		if s := &t.st[i]; s.txn != nil {
			t.commit(ctx, s)
		}
	}
}
