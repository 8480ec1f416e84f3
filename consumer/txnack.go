package consumer

import (
	"errors"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute"
)

// TxnAck returns m's acknowledgement for a producer transaction
// (producer.(*Txn).Ack), for consume-transform-produce: the message is
// acknowledged if and only if the transaction commits on m's cluster. It
// returns ErrNilMessage for nil, and a *ClusterError for a Message that
// was not received by c (ErrUnknownCluster) or whose cluster is closed.
func (c *Consumer) TxnAck(m *Message) (keyroute.TxnAck, error) {
	if m == nil || m.raw == nil {
		return nil, ErrNilMessage
	}
	if c != nil && c.subs != nil {
		return c.txnAckTopics(m)
	}
	k, err := c.from(m, "ack in transaction")
	if err != nil {
		return nil, err
	}
	s, _, err := k.streamFor(m.ID)
	if err != nil {
		return nil, clusterErr(k.name, "ack in transaction", err)
	}
	return txnAck{k: k, s: s, m: m.raw}, nil
}

type txnAck struct {
	k *cluster
	s stream // of m's partition
	m pulsar.Message
}

func (a txnAck) Cluster() string { return a.k.name }

// txnAcker is the part of a pulsar-client-go consumer that acknowledges
// in a transaction (a test's stand-in stream may lack it).
type txnAcker interface {
	AckWithTxn(pulsar.Message, pulsar.Transaction) error
}

func (a txnAck) AckWithTxn(txn pulsar.Transaction) error {
	s, ok := a.s.(txnAcker)
	if !ok {
		return clusterErr(a.k.name, "ack in transaction", errors.ErrUnsupported)
	}
	if err := s.AckWithTxn(a.m, txn); err != nil {
		return clusterErr(a.k.name, "ack in transaction", brokerError(err))
	}
	a.k.acked.Add(1)
	return nil
}
