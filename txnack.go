package keyroute

import "github.com/apache/pulsar-client-go/pulsar"

// TxnAck is the acknowledgement of a consumed message made inside a
// producer's transaction, so that consume, transform and produce commit
// together on the message's cluster: consumer.(*Consumer).TxnAck makes
// one, producer.(*Txn).Ack stages it.
type TxnAck interface {
	// Cluster is the cluster the message was read from: the transaction
	// must have a Pulsar transaction there.
	Cluster() string
	// AckWithTxn acknowledges the message in txn, a transaction begun on
	// that cluster, and waits for the broker's answer.
	AckWithTxn(txn pulsar.Transaction) error
}
