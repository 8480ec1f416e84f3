package consumer

import "time"

// SetHoldClock makes c's hand-over read the time from now (holds' ages).
func SetHoldClock(c *Consumer, now func() time.Time) {
	c.hold.mu.Lock()
	defer c.hold.mu.Unlock()
	c.hold.now = now
}

// HoldTick runs the monitor's check of the holds' ages once.
func HoldTick(c *Consumer) { c.hold.tick() }

// Pack and Unpack are the frontier word's encoding.
var (
	Pack   = pack
	Unpack = unpack
)
