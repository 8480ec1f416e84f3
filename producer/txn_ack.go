package producer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/keyroute/keyroute"
)

// txnAck is a staged acknowledgement and the cluster it commits on.
type txnAck struct {
	a keyroute.TxnAck
	c *cluster
}

// Ack stages the acknowledgement of a consumed message (from
// consumer.(*Consumer).TxnAck) in the transaction, for
// consume-transform-produce: at Commit it is made in the Pulsar
// transaction of the message's cluster, after every staged message is
// written and before the commits, so the message counts as consumed if
// and only if that cluster's transaction commits. A cluster the
// transaction touches only through acknowledgements gets a Pulsar
// transaction of its own. Ack does no I/O.
//
// It returns ErrNilMessage for nil, a *ClusterError matching
// keyroute.ErrUnknownCluster when the message's cluster is not one of the
// Producer's, a *CrossClusterError under TxnSingleCluster when it is not
// the transaction's cluster, and ErrTxnDone after Commit or Abort. A
// transaction's first Ack, before any Send, makes its cluster the one
// keyless messages go to.
func (t *Txn) Ack(a keyroute.TxnAck) error {
	if a == nil {
		return ErrNilMessage
	}
	name := a.Cluster()
	var c *cluster
	for _, k := range t.p.all() {
		if k.name == name {
			c = k
			break
		}
	}
	if c == nil {
		return &ClusterError{Cluster: name, Op: "ack in transaction", Err: keyroute.ErrUnknownCluster}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != txnOpen {
		return ErrTxnDone
	}
	if t.cfg.singleCluster && t.home != nil && c != t.home {
		return &CrossClusterError{Cluster: c.name, TxnCluster: t.home.name}
	}
	if t.home == nil {
		t.home = c
	}
	t.acks = append(t.acks, txnAck{a: a, c: c})
	return nil
}

// ackAll makes every staged acknowledgement in its cluster's transaction,
// the clusters in parallel and one acknowledgement at a time within each,
// and waits for the brokers' answers until ctx ends or the deadline. It
// returns the errors, each naming its cluster. One at a time: pulsar-client-go
// v0.21.0 records a transaction's acknowledged subscriptions in a map it
// reads without its lock (transaction.registerAckTopic), so two
// acknowledgements of one transaction on two partitions at once can crash
// the process (concurrent map read and write).
func (p *Producer) ackAll(ctx context.Context, plan []*txnCluster, deadline time.Time) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, tc := range plan {
		if len(tc.acks) == 0 {
			continue
		}
		wg.Add(1)
		p.goBG(func() {
			defer wg.Done()
			for _, a := range tc.acks {
				if err := a.a.AckWithTxn(tc.txn); err != nil {
					mu.Lock()
					errs = append(errs, &ClusterError{Cluster: tc.c.name, Op: "ack in transaction", Err: err})
					mu.Unlock()
					return
				}
			}
		})
	}
	if !p.wait(ctx, deadline, &wg) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return errors.New("acknowledgements not answered within the transaction timeout")
	}
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(errs...)
}
