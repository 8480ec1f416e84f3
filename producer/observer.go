package producer

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Op is the kind of send.
type Op uint8

// Ops.
const (
	OpSend      Op = iota // Send: waits for the ack
	OpSendAsync           // SendAsync: batched, outcome by callback
	OpSendTxn             // a message of a transaction (Txn, RunInTxn, SendTxnBulk)
)

func (o Op) String() string {
	switch o {
	case OpSend:
		return "send"
	case OpSendAsync:
		return "send_async"
	case OpSendTxn:
		return "send_txn"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Event describes one message's trip through the Producer, for observers.
type Event struct {
	Op        Op
	Topic     string
	Cluster   string
	Partition int
	// ServiceURL is the cluster's service URL.
	ServiceURL string
	Key        string
	// Properties are the message's own properties. Read only: an observer
	// that wants to send others returns a new map from OnStart.
	Properties map[string]string
	// Bytes is what the message holds of the memory limit.
	Bytes int64
	// Start is when the message was handed over (time.Now, so
	// time.Since(ev.Start) reads the monotonic clock).
	Start time.Time

	// Outcome, set before OnDone.
	ID  ID
	Err error

	// Token is the observer's own: OnStart may set it, OnDone reads it.
	Token any
}

// Observer sees every routed message: OnStart when it is handed over, and
// OnDone exactly once with its outcome. Both run on hot paths and must be
// safe for concurrent use, fast, and never block: OnDone runs on the
// cluster's callback goroutine (before the message's callback, or Send's
// return) or, for SendAsync without a callback, on the goroutine
// pulsar-client-go reports on (or the caller's, for a message refused
// before hand-over, or one pulsar-client-go fails while it takes it, while
// the Producer holds the partition's lock): so neither may call the
// Producer.
//
// OnStart may return properties to send instead of the message's own
// (ev.Properties), e.g. a copy with trace context added; it must not modify
// the message's map. It returns nil to keep the message's properties.
// Messages that fail before they are handed to a writer (cluster down, ctx
// ended while waiting for buffer space) are observed too: OnStart, then
// OnDone with the error.
//
// Messages of a transaction are observed as OpSendTxn: OnStart for each when
// Commit (or RunInTxn, SendTxnBulk) starts committing them, and OnDone, on
// the committing goroutine, once the outcome is known: the ID when the
// message's cluster committed, else the error (for a partial commit, that of
// the message's own cluster). A retried attempt does not start them again.
//
// The Producer reuses an Event once OnDone has returned: an observer may
// keep ev from OnStart until OnDone, and must copy what it keeps after.
type Observer interface {
	OnStart(ctx context.Context, ev *Event) map[string]string
	OnDone(ev *Event)
}

// eventPool recycles the Events of observed messages: an Event goes back
// to it once OnDone has returned (observers must not keep it; see
// Observer), so that observing does not add an allocation, and its bytes,
// to every message.
var eventPool = sync.Pool{New: func() any { return new(Event) }}

// observe fills ev, an Event from eventPool or a pooled inflight's own,
// for msg and tells the observer; it returns the properties to send.
func (p *Producer) observe(ctx context.Context, op Op, c *cluster, pt *partition, msg *Message, n int64, ev *Event) map[string]string {
	// Field by field, the Producer's own strings only when they differ
	// (see reset): while the GC marks, each pointer stored costs a write
	// barrier.
	ev.Op, ev.Partition, ev.Bytes = op, pt.idx, n
	storeIfNew(&ev.Topic, p.cfg.topic)
	storeIfNew(&ev.Cluster, c.name)
	storeIfNew(&ev.ServiceURL, c.url)
	ev.Key = msg.Key
	if msg.Properties != nil {
		ev.Properties = msg.Properties
	}
	ev.Start = time.Now()
	if props := c.obs.OnStart(ctx, ev); props != nil {
		return props
	}
	return msg.Properties
}

// eventFor returns the Event of an observed message: f's own (an observed
// slab's inflight), or one from eventPool.
func eventFor(f *inflight) *Event {
	if f.own != nil {
		return f.own
	}
	return eventPool.Get().(*Event)
}

// end tells the observer ev's outcome and recycles ev.
func (c *cluster) end(ev *Event) {
	c.obs.OnDone(ev)
	ev.reset()
	eventPool.Put(ev)
}

// reset readies ev, whose OnDone has returned, for its next message: it
// drops what the message left (its key, properties, outcome and Start)
// and the observer's Token, storing only fields that are set. It keeps
// Topic, Cluster and ServiceURL, which are Producer's own strings, and the
// fields observe sets for every message, so that a message stores only
// what changed (each pointer store is a write barrier while the GC marks).
func (ev *Event) reset() {
	ev.Key = ""
	if ev.Properties != nil {
		ev.Properties = nil
	}
	storeIfNew(&ev.ID.Cluster, "")
	ev.ID.Partition = 0
	if ev.ID.MessageID != nil {
		ev.ID.MessageID = nil
	}
	if ev.Err != nil {
		ev.Err = nil
	}
	if ev.Token != nil {
		ev.Token = nil
	}
	storeIfNew(&ev.Start, time.Time{})
}
