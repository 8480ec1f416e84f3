package consumer

import (
	"fmt"
	"time"

	"github.com/keyroute/keyroute/router"
)

// Observer sees every message and acknowledgement of a Consumer. Its
// methods run on hot paths and must be safe for concurrent use, fast, and
// never block:
//
//   - OnReceive once a message is handed to the caller: on the caller's
//     goroutine before Receive or ReceiveBatch returns it, on Chan's
//     goroutine after the caller took it from Chan (so possibly while the
//     caller already processes and acknowledges it); messages dropped by
//     SeekByTime or Close are not observed;
//   - OnAck after each Ack, AckID, AckCumulative and AckIDCumulative that
//     reached a cluster's pulsar-client-go consumer, with its error, on
//     the caller's goroutine (calls refused before, for an unknown
//     cluster, a closed Consumer or a cumulative ack on a Shared
//     subscription, return their error without being observed);
//   - OnNack after each Nack and NackID, on the caller's goroutine.
//
// Observers must not modify the message, nor keep it past the call
// (ReceiveInto hands over Messages in a buffer the caller reuses).
type Observer interface {
	OnReceive(m *Message)
	OnAck(id ID, err error)
	OnNack(id ID)
}

// HandoverObserver is an Observer that also sees the hand-over of moving
// keys (router/HANDOVER.md, section 6): each hold that ends as planned
// (HandoverReleased), and each place where it does not go to plan. An
// Observer given to Observe that has OnHandover gets these events too. It
// runs on the goroutine that took the message (a Receive caller, Chan's
// goroutine) or on the Consumer's monitor (a hold timeout), never under a
// lock of the Consumer; it must be fast and must not block.
type HandoverObserver interface {
	OnHandover(e HandoverEvent)
}

// HandoverKind is what a HandoverEvent reports.
type HandoverKind int

// Hand-over events. Every one but HandoverReleased and HandoverBad may
// deliver a moved key's message before an earlier one of that key from
// the same producer: a possible reorder, reported rather than silent.
const (
	// HandoverTimeout: the partition a hold waits on made no progress for
	// the HoldTimeout option, and the hold's queue was delivered, in
	// order, without its origin passed.
	HandoverTimeout HandoverKind = iota + 1
	// HandoverLimit: MaxHeld messages were held on a Retry subscription,
	// which cannot leave one partition unread; the oldest hold's queue was
	// delivered, in order, without its origin passed.
	HandoverLimit
	// HandoverUnread: a moved message names an origin on a cluster the
	// Consumer does not read; it is not held for it.
	HandoverUnread
	// HandoverUnordered: a moved message with keyroute-unordered: its producer
	// released it without an origin it owed (its down policy Spill).
	HandoverUnordered
	// HandoverBad: a message whose keyroute- properties do not follow
	// HANDOVER.md; it is delivered as an ordinary message (Err says what
	// is wrong).
	HandoverBad
	// HandoverReleased: held messages whose origins passed were delivered,
	// in order: the hand-over went to plan; Held is what it cost them.
	HandoverReleased
)

func (k HandoverKind) String() string {
	switch k {
	case HandoverTimeout:
		return "hold timeout"
	case HandoverLimit:
		return "hold limit"
	case HandoverUnread:
		return "origin unread"
	case HandoverUnordered:
		return "unordered"
	case HandoverBad:
		return "bad hand-over"
	case HandoverReleased:
		return "released"
	}
	return fmt.Sprintf("HandoverKind(%d)", int(k))
}

// HandoverEvent is one report of the hand-over. Cluster and Partition are
// where the message (the head of the released queue) was read; Slot is its
// key's slot (-1 for a keyless message); Producer and Epoch are its tag's
// (0 when it has none); Origin is the origin that had not passed (zero for
// HandoverUnordered, HandoverBad and HandoverReleased).
type HandoverEvent struct {
	Kind      HandoverKind
	Cluster   string
	Partition int
	Slot      int
	Producer  uint64
	Epoch     uint64
	Origin    router.Origin
	// Messages is how many messages the event released (1 for
	// HandoverUnread, HandoverUnordered and HandoverBad).
	Messages int
	// Held is how long the released queue's first message was held.
	Held time.Duration
	// OriginSeen is false when the Consumer never received a message of
	// the origin's partition: the partition may be one its subscription
	// does not read (yet), or a Failover or KeyShared consumer not active
	// there.
	OriginSeen bool
	Err        error // HandoverBad's *router.HandoverError
}
