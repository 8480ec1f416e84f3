package producertest

import "fmt"

// Cluster is one fake cluster. Its settings take effect at once, for the
// messages and calls that come after; those that decide what a
// connection has (FailConnect, Transactions) take effect at the next
// connect.
type Cluster struct {
	cs    *Clusters
	name  string
	parts []*Partition // guarded by cs.mu: Grow adds to it

	// Guarded by cs.mu.
	holding    bool
	blackHole  chan struct{} // non-nil while connects get no answer; closed when they do again
	connectErr error
	probeErr   error
	noTxn      bool
	sends      int // messages that reached the cluster's writers
	failAt     int // the send that fails with failAtErr; valid when failAtErr != nil
	failAtErr  error
	beginErrs  []error
	commitErr  error
	abortErr   error
	begins     *stall // nil: begins go through
	commits    *stall // nil: commits go through
	outlive    bool
	stalled    int
	probes     int
	connects   int
	waiting    int // connects in the black hole
	reported   int // Shrink: the partition count a lookup reports; 0: len(parts)
}

// Grow gives the topic n partitions on the cluster, as the Pulsar admin
// API's update of a partitioned topic does; it panics when n is below the
// count. A Producer sees them at its next partition discovery
// (producer.PartitionsAutoDiscoveryInterval).
func (c *Cluster) Grow(n int) {
	c.cs.locked(func() {
		if n < len(c.parts) {
			panic(fmt.Sprintf("producertest: Grow(%d) below %d partitions", n, len(c.parts)))
		}
		for i := len(c.parts); i < n; i++ {
			c.parts = append(c.parts, &Partition{c: c, idx: i})
		}
	})
}

// Shrink makes the cluster's partition lookups report n partitions, as a
// topic deleted and made again with fewer would (Pulsar cannot shrink
// one); the partitions stay for the writers open on them. Shrink(0)
// reports the real count again.
func (c *Cluster) Shrink(n int) { c.cs.locked(func() { c.reported = n }) }

// Name returns the cluster's name.
func (c *Cluster) Name() string { return c.name }

// Partitions returns the cluster's partition count.
func (c *Cluster) Partitions() (n int) {
	c.cs.locked(func() { n = len(c.parts) })
	return n
}

// Partition returns partition i; it panics when there is none.
func (c *Cluster) Partition(i int) (p *Partition) {
	c.cs.locked(func() { p = c.parts[i] })
	return p
}

// Messages returns what the cluster's partitions wrote and a consumer
// would read, partition after partition (see Partition.Messages).
func (c *Cluster) Messages() []Message {
	var out []Message
	var parts []*Partition
	c.cs.locked(func() { parts = c.parts })
	for _, p := range parts {
		out = append(out, p.Messages()...)
	}
	return out
}

// Hold makes every partition write the messages it is sent but hold back
// their acknowledgements (as over a slow or broken connection) until
// Partition.Ack, Partition.Fail or Release. A Flush waits for them.
func (c *Cluster) Hold() { c.cs.locked(func() { c.holding = true }) }

// Release acknowledges the messages every partition holds (each
// partition's as one batch, per writer) and stops holding: later messages
// are acknowledged as usual.
func (c *Cluster) Release() {
	var parts []*Partition
	c.cs.locked(func() { parts = c.parts })
	c.cs.settle(c, parts, 0, nil, true)
}

// FailSends makes every partition refuse every message with err (nothing
// is written) until FailSends(nil). Partition.FailSends does the same for
// one partition.
func (c *Cluster) FailSends(err error) {
	c.cs.locked(func() {
		for _, p := range c.parts {
			p.failErr = err
		}
	})
}

// FailSendAt makes the n-th message sent to the cluster from now (0: the
// next; counted over its partitions) fail with err: it is refused,
// nothing is written.
func (c *Cluster) FailSendAt(n int, err error) {
	c.cs.locked(func() { c.failAt, c.failAtErr = c.sends+n, err })
}

// BlackHole makes the cluster unreachable, as a stopped broker is (on):
// a connect to it gets no answer, and waits until BlackHole(false) or
// until the connecting Producer gives up (its ctx ends: Close, or New's
// ctx with RequireAllClusters). Connects waiting when it is turned off go
// on at once. Producers already connected are not affected: use Hold for
// a connected cluster that stops answering.
func (c *Cluster) BlackHole(on bool) {
	c.cs.locked(func() {
		switch {
		case on && c.blackHole == nil:
			c.blackHole = make(chan struct{})
		case !on && c.blackHole != nil:
			close(c.blackHole)
			c.blackHole = nil
		}
	})
}

// Waiting returns how many connects wait on the cluster's black hole.
func (c *Cluster) Waiting() (n int) {
	c.cs.locked(func() { n = c.waiting })
	return n
}

// FailConnect makes connecting to the cluster fail with err (nil: succeed).
func (c *Cluster) FailConnect(err error) { c.cs.locked(func() { c.connectErr = err }) }

// FailProbes makes the cluster's probes (a health check that writes
// nothing) fail with err; nil makes them succeed, as they do by default.
func (c *Cluster) FailProbes(err error) { c.cs.locked(func() { c.probeErr = err }) }

// Probes returns how many times the cluster was probed.
func (c *Cluster) Probes() (n int) {
	c.cs.locked(func() { n = c.probes })
	return n
}

func (c *Cluster) probe() (err error) {
	c.cs.locked(func() {
		c.probes++
		err = c.probeErr
	})
	return err
}

// Connects returns how many times a Producer connected to the cluster.
func (c *Cluster) Connects() (n int) {
	c.cs.locked(func() { n = c.connects })
	return n
}

// Writers returns how many partition writers are open on the cluster: a
// connected Producer has one per partition until it closes, and one more
// per partition, reserved for bulk transactions, once it used SendTxnBulk.
func (c *Cluster) Writers() (n int) {
	c.cs.locked(func() {
		for _, p := range c.parts {
			n += len(p.writers)
		}
	})
	return n
}
