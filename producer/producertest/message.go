package producertest

import (
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Message is a message as a fake partition wrote it.
type Message struct {
	Cluster   string
	Partition int

	Key         string
	OrderingKey string
	// Value is the payload: nil for a null value, non-nil (maybe empty)
	// otherwise. It is the fake's own copy.
	Value []byte
	// Properties is the map that was sent, not a copy: do not modify it.
	Properties map[string]string
	EventTime  time.Time
	// DeliverAfter and DeliverAt are the message's delivery delay, as
	// Pulsar reads them: a DeliverAt not after 1970 is no delivery time
	// and reads as the zero time.
	DeliverAfter time.Duration
	DeliverAt    time.Time

	// ID is the message's ID once it is acknowledged; nil before, and for
	// good when it failed or its writer closed first.
	ID pulsar.MessageID
	// Txn is the number of the message's transaction (see Event.Txn); 0
	// for none.
	Txn uint64
}

// Op is what an Event records.
type Op string

// The operations an Event records. The message operations (OpSend to
// OpFail) are kept only with KeepMessages(true), the default.
const (
	OpSend     Op = "send"     // a partition wrote a message
	OpSendFail Op = "sendfail" // a partition refused a message (nothing written)
	OpAck      Op = "ack"      // a written message was acknowledged
	OpFail     Op = "fail"     // a written message was reported failed (Partition.Fail)

	OpBegin      Op = "begin"      // a transaction began
	OpBeginFail  Op = "beginfail"  // a transaction could not begin
	OpCommit     Op = "commit"     // a transaction committed
	OpCommitFail Op = "commitfail" // a commit failed (the transaction stays open)
	OpAbort      Op = "abort"      // a transaction aborted
	OpAbortFail  Op = "abortfail"  // an abort of a transaction not open
)

// Event is one thing that happened on the fake clusters.
type Event struct {
	Op      Op
	Cluster string
	// Partition is the partition of a message operation; -1 for the
	// transaction operations.
	Partition int
	// Key is the key of the message of a message operation.
	Key string
	// Txn is the transaction's number: the fake numbers transactions
	// 1, 2, ... in the order they begin, across clusters. 0 for a message
	// sent outside a transaction and for OpBeginFail.
	Txn uint64
	// Messages is, for the transaction operations, how many messages of
	// the transaction had been acknowledged by then.
	Messages int
	// Err is the error of OpSendFail, OpFail, OpBeginFail, OpCommitFail
	// and OpAbortFail.
	Err error
	// Conn is, for the message operations, the connection whose writer
	// the message was sent to: 1 for the cluster's first connect, 2 for
	// the next (a Producer that reconnected, or a second Producer), and
	// so on (see Cluster.Connects); 0 for the transaction operations.
	Conn int
}

func (e Event) String() string {
	s := fmt.Sprintf("%s %s", e.Op, e.Cluster)
	if e.Partition >= 0 {
		s += fmt.Sprintf("/%d %q", e.Partition, e.Key)
	}
	if e.Txn != 0 {
		s += fmt.Sprintf(" txn %d", e.Txn)
	}
	if e.Op == OpCommit || e.Op == OpCommitFail || e.Op == OpAbort {
		s += fmt.Sprintf(" (%d messages)", e.Messages)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// msgID is the pulsar.MessageID of a message acknowledged by a fake
// partition: ledger 1, one entry per batch (a message acknowledged on
// its own is a batch of one, as pulsar-client-go reports it).
type msgID struct {
	entry     int64
	part      int32
	idx, size int32
}

func (id *msgID) LedgerID() int64     { return 1 }
func (id *msgID) EntryID() int64      { return id.entry }
func (id *msgID) BatchIdx() int32     { return id.idx }
func (id *msgID) PartitionIdx() int32 { return id.part }
func (id *msgID) BatchSize() int32    { return id.size }

// Serialize serializes the ID as pulsar-client-go does, without its batch
// size (pulsar.NewMessageID takes none).
func (id *msgID) Serialize() []byte {
	return pulsar.NewMessageID(1, id.entry, id.idx, id.part).Serialize()
}

// String is pulsar-client-go's form: ledger:entry:partition:batch index.
func (id *msgID) String() string {
	return fmt.Sprintf("1:%d:%d:%d", id.entry, id.part, id.idx)
}
