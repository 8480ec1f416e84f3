package consumer

import "time"

// Defaults of the hand-over's bounds.
const (
	// DefaultHoldTimeout bounds a hold by time: Pulsar's default send
	// timeout, the longest a producer keeps a moved key's messages before
	// its down policy decides.
	DefaultHoldTimeout = 30 * time.Second
	// DefaultMaxHeld bounds the messages held at once.
	DefaultMaxHeld = 5000
)

// HoldTimeout bounds how long the Consumer holds a moved key's message
// for the key's earlier messages on the old owner (router/HANDOVER.md,
// section 6; default DefaultHoldTimeout). A hold older than d is
// released: its queue is delivered in order, and the release is reported
// (HandoverObserver's HandoverTimeout, Health's ForcedReleases). Holds are
// checked as messages come and every ProbeInterval, so a release can come
// up to one ProbeInterval after d.
func HoldTimeout(d time.Duration) Opt { return optFunc(func(c *cfg) { c.holdTimeout = d }) }

// MaxHeld bounds how many messages the Consumer holds at once over every
// cluster (default DefaultMaxHeld). Held messages are out of
// pulsar-client-go's receiver queues, so they add to MaxBuffered's memory.
// At the bound the oldest hold is released: its queue is delivered in
// order and the release is reported (HandoverLimit, ForcedReleases).
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
