package consumertest

import (
	"fmt"
	"time"
)

// Cluster is one fake cluster: the topic's partitions, each a log of the
// messages published on it, and the subscriptions on them.
type Cluster struct {
	cs   *Clusters
	name string

	// Guarded by cs.mu.
	logs       [][]*stored // by partition, in publish order
	subs       map[string]*subscription
	stalled    bool
	connectErr error
	probeErr   error
	ackErr     error
}

// subscription is a subscription's state on one cluster.
type subscription struct {
	name string
	// Guarded by cs.mu.
	acked [][]bool            // by partition and entry; shorter than the log: not acked
	count map[[2]int64]uint32 // redeliveries, by partition and entry
	open  *stream             // the Consumer's stream, nil when none
	// unset, by partition: its start is not set yet (the subscription
	// was made by a reset of another partition); its first Consumer's
	// initial position sets it, as a broker makes a partition's
	// subscription when a consumer first subscribes there.
	unset []bool
}

// newSubscription makes a subscription whose partitions' start its first
// Consumer sets (see start); cs.mu is held.
func (c *Cluster) newSubscription(name string) *subscription {
	s := &subscription{name: name, acked: make([][]bool, len(c.logs)), count: map[[2]int64]uint32{}, unset: make([]bool, len(c.logs))}
	for p := range s.unset {
		s.unset[p] = true
	}
	c.subs[name] = s
	return s
}

// start sets the start of the partitions whose start is not set: the
// first message (earliest) or after the last one; cs.mu is held.
func (s *subscription) start(c *Cluster, earliest bool) {
	for p, log := range c.logs {
		if !s.unset[p] {
			continue
		}
		s.unset[p] = false
		if earliest {
			s.acked[p] = nil
			continue
		}
		s.acked[p] = make([]bool, len(log))
		for i := range s.acked[p] {
			s.acked[p][i] = true
		}
	}
}

func (s *subscription) isAcked(p int, e int64) bool {
	return e < int64(len(s.acked[p])) && s.acked[p][e]
}

func (s *subscription) ack(p int, e int64) {
	for int64(len(s.acked[p])) <= e {
		s.acked[p] = append(s.acked[p], false)
	}
	s.acked[p][e] = true
}

// Name returns the cluster's name.
func (c *Cluster) Name() string { return c.name }

// Partitions returns how many partitions the topic has on the cluster.
func (c *Cluster) Partitions() int { return len(c.logs) }

// Publish appends messages to a partition's log, in order, and wakes the
// consumers subscribed there. It returns an error naming the partition
// when the cluster has no such partition.
func (c *Cluster) Publish(partition int, ms ...Message) error {
	c.cs.mu.Lock()
	defer c.cs.mu.Unlock()
	if partition < 0 || partition >= len(c.logs) {
		return fmt.Errorf("consumertest: cluster %q has no partition %d (it has %d)", c.name, partition, len(c.logs))
	}
	for _, m := range ms {
		if m.PublishTime.IsZero() {
			m.PublishTime = time.Now()
		}
		log := c.logs[partition]
		c.logs[partition] = append(log, &stored{Message: m, id: newID(partition, int64(len(log)))})
	}
	c.wakeLocked()
	return nil
}

// Stall makes the cluster deliver nothing more and fail its probes with
// ErrStalled (so that Health reports it down) until Resume, as a cluster
// that stopped answering would. Messages already in a Consumer's queue
// stay there; acknowledgements are still recorded.
func (c *Cluster) Stall() { c.cs.locked(func() { c.stalled = true }) }

// Resume ends a Stall: delivery goes on where it stopped.
func (c *Cluster) Resume() {
	c.cs.locked(func() {
		c.stalled = false
		c.wakeLocked()
	})
}

// FailConnect makes every later subscribe on the cluster fail with err
// (nil: succeed again), so that consumer.New fails naming the cluster.
func (c *Cluster) FailConnect(err error) { c.cs.locked(func() { c.connectErr = err }) }

// FailProbes makes the cluster's probes fail with err (nil: answer
// again), as a broker that cannot be reached.
func (c *Cluster) FailProbes(err error) { c.cs.locked(func() { c.probeErr = err }) }

// FailAcks makes acknowledgements on the cluster fail with err (nil:
// succeed again); a failed acknowledgement is not recorded.
func (c *Cluster) FailAcks(err error) { c.cs.locked(func() { c.ackErr = err }) }

// Backlog returns how many of the cluster's messages the named
// subscription has not acknowledged; 0 for a subscription that does not
// exist there.
func (c *Cluster) Backlog(subscription string) int {
	c.cs.mu.Lock()
	defer c.cs.mu.Unlock()
	s := c.subs[subscription]
	if s == nil {
		return 0
	}
	n := 0
	for p, log := range c.logs {
		for e := range log {
			if !s.isAcked(p, int64(e)) {
				n++
			}
		}
	}
	return n
}

// probe is the cluster's health probe.
func (c *Cluster) probe() error {
	c.cs.mu.Lock()
	defer c.cs.mu.Unlock()
	if c.stalled {
		return ErrStalled
	}
	return c.probeErr
}

// wakeLocked tells every open stream on the cluster that there may be
// something to deliver; cs.mu is held.
func (c *Cluster) wakeLocked() {
	for _, s := range c.subs {
		if s.open != nil {
			s.open.poke()
		}
	}
}

// locked runs fn with cs.mu held.
func (cs *Clusters) locked(fn func()) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	fn()
}
