package producer

import (
	"context"
	"errors"
)

// observeTxn starts an Event (OpSendTxn) for every message of a commit when
// the producer is observed, and keeps the properties the observer returns
// for the sends. Start is the start of the commit: a transactional
// message's duration is that of its commit.
func (p *Producer) observeTxn(ctx context.Context, msgs []stagedMsg) {
	for i := range msgs {
		m := &msgs[i]
		if m.c.obs == nil {
			return
		}
		m.ev = eventPool.Get().(*Event)
		m.props = p.observe(ctx, OpSendTxn, m.c, m.pt, m.msg, m.n, m.ev)
	}
}

// txnDone reports each observed message of a finished commit: its ID when
// its cluster committed, else the commit's error (for a partial commit, the
// error of the message's own cluster).
func (p *Producer) txnDone(msgs []stagedMsg, res TxnResult, err error) {
	var pce *PartialCommitError
	errors.As(err, &pce)
	for i := range msgs {
		m := &msgs[i]
		if m.ev == nil {
			continue
		}
		switch {
		case err == nil:
			m.ev.ID = res.IDs[i]
		case pce != nil && pce.Errs[m.c.name] == nil:
			m.ev.ID = res.IDs[i]
		case pce != nil:
			m.ev.Err = pce.Errs[m.c.name]
		default:
			m.ev.Err = err
		}
		m.c.end(m.ev)
		m.ev = nil
	}
}
