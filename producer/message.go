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
}

// ID identifies a written message: the cluster, the partition within it, and
// the Pulsar message ID there.
type ID struct {
	Cluster   string
	Partition int
	MessageID pulsar.MessageID
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
