package consumer

import "time"

// Defaults of the hand-over's bounds.
const (
	// DefaultHoldTimeout is how long a hold waits on an origin that makes
	// no progress: Pulsar's default send timeout, the longest a producer
	// keeps a moved key's messages before its down policy decides.
	DefaultHoldTimeout = 30 * time.Second
	// DefaultMaxHeld bounds the messages held at once.
	DefaultMaxHeld = 5000
)

// HoldTimeout bounds how long the Consumer holds a moved key's message
// for an origin, the key's earlier messages on the old owner
// (router/HANDOVER.md, section 6), that makes no progress: the hold is
// released when the origin's partition has delivered nothing new for d
// (its cluster down or not read, or the origin acknowledged before a
// restart), never while that partition is being read, however long a
// backlog takes. Its queue is delivered in order, and the release is
// reported (HandoverObserver's HandoverTimeout, Health's ForcedReleases).
// The monitor checks every ProbeInterval, so a release can come up to one
// ProbeInterval after d. Default DefaultHoldTimeout.
func HoldTimeout(d time.Duration) Opt { return optFunc(func(c *cfg) { c.holdTimeout = d }) }

// MaxHeld bounds how many messages the Consumer holds at once over every
// cluster (default DefaultMaxHeld). Held messages are out of
// pulsar-client-go's receiver queues, so they add to MaxBuffered's memory.
// At the bound the Consumer stops reading each partition that holds
// messages, leaving its later messages in its receiver queue and on the
// broker, until it holds none; the other partitions, those the holds wait
// on among them, go on being read. So a reader catching up on a backlog
// keeps every key's order with at most MaxHeld messages held, plus one
// per partition taken while the bound was reached. A Retry subscription
// reads all the partitions of a cluster through one pulsar-client-go
// consumer, which cannot be stopped alone: there, at the bound, the
// oldest hold is released instead, in order, and reported
// (HandoverLimit, ForcedReleases).
func MaxHeld(n int) Opt { return optFunc(func(c *cfg) { c.maxHeld = n }) }

func (c *cfg) validateHold() error {
	switch {
	case c.holdTimeout <= 0:
		return badOption("HoldTimeout", c.holdTimeout, "must be > 0")
	case c.maxHeld < 1:
		return badOption("MaxHeld", c.maxHeld, "must be >= 1")
	}
	return nil
}
