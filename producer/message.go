package producer

import (
	"strconv"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Message is one message to send. The Producer does not modify it; the
// caller must not modify it until its outcome is known.
type Message struct {
	// Key picks the cluster and partition. Messages with equal keys keep
	// their order. An empty Key means no key: no order promise.
	Key string
	// Value is the payload. A nil or empty Value sends an empty payload
	// (a consumer's IsNullValue is false).
	Value []byte
	// NullValue sends a Pulsar null value instead of a payload: a
	// consumer's IsNullValue is true, and topic compaction treats it as a
	// tombstone that deletes the key. Value must then be empty
	// (ErrBadMessage otherwise).
	NullValue bool
	// Properties are sent as Pulsar message properties.
	Properties map[string]string
	// EventTime is optional; the zero time leaves it unset.
	EventTime time.Time

	// OrderingKey, when set, is what KeyShared subscriptions (and
	// key-based batching) group the message by instead of Key. Routing
	// always uses Key.
	OrderingKey string
	// DeliverAfter and DeliverAt delay the message's delivery (Pulsar
	// delivers delayed messages on Shared and KeyShared subscriptions
	// only; others get them at once). Set at most one; DeliverAt must not
	// be before 1970. A delayed message is sent on its own, not batched,
	// and reaches its consumers after the key's later undelayed messages.
	DeliverAfter time.Duration
	DeliverAt    time.Time
	// ReplicationClusters limits the geo-replication of the message to
	// these clusters of its keyroute cluster's Pulsar instance (names of
	// Pulsar clusters there, not keyroute's); DisableReplication keeps it
	// in the cluster it is written to. Set at most one. Either sends the
	// message on its own, not batched.
	ReplicationClusters []string
	DisableReplication  bool
	// SequenceID, when set, replaces the sequence id pulsar-client-go
	// gives the message, for broker deduplication: it must grow from one
	// message to the next of the same partition writer (the key's
	// Placement), as the broker drops a message whose id is not above the
	// last it stored from that writer's name (see Name: with batching on,
	// the broker sees only each batch's first id).
	SequenceID *int64

	encodeErr error // set by Typed for a value its schema could not encode
}

// ID identifies a written message: the cluster, the partition within it, and
// the Pulsar message ID there.
type ID struct {
	Cluster   string
	Partition int
	MessageID pulsar.MessageID
}

// Duplicate reports whether the broker acknowledged the message without
// storing it, as a duplicate of one it had stored (broker deduplication,
// see Name): pulsar-client-go reports those with ledger and entry -1.
func (id ID) Duplicate() bool {
	return id.MessageID != nil && id.MessageID.LedgerID() == -1 && id.MessageID.EntryID() == -1
}

// String returns "cluster/partition/ledger:entry:batch".
func (id ID) String() string {
	s := id.Cluster + "/" + strconv.Itoa(id.Partition) + "/"
	if id.MessageID == nil {
		return s + "-"
	}
	return s + strconv.FormatInt(id.MessageID.LedgerID(), 10) + ":" +
		strconv.FormatInt(id.MessageID.EntryID(), 10) + ":" +
		strconv.FormatInt(int64(id.MessageID.BatchIdx()), 10)
}

// Callback receives the outcome of a message given to SendAsync: an ID, or a
// non-nil error (see NotWritten and Reason). It is called exactly once per
// message, after the callbacks of the key's earlier messages. It runs on
// the cluster's callback goroutine (see the package doc) and should return
// quickly: while it runs, later callbacks of that cluster wait. It must
// not wait for other outcomes: Send, Flush and Close return ErrInCallback
// there.
type Callback func(id ID, msg *Message, err error)
