package consumer

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Ack acknowledges m on its cluster. With AckGrouping (the default) the
// acknowledgement is queued and sent with others, and Ack returns at once
// (ctx is not consulted). With AckWithResponse Ack waits for the broker's
// answer until ctx ends, and then returns an error matching ctx.Err(): the
// acknowledgement is still in flight and may yet be recorded. It returns
// ErrNilMessage for nil, and a *ClusterError (ErrUnknownCluster, ErrClosed,
// the ctx's error or pulsar-client-go's) naming the cluster otherwise.
func (c *Consumer) Ack(ctx context.Context, m *Message) error {
	if m == nil {
		return ErrNilMessage
	}
	if c != nil && c.subs != nil {
		s, err := c.subOf(m, "ack")
		if err != nil {
			return err
		}
		return s.Ack(ctx, m)
	}
	if m.raw == nil {
		return c.AckID(ctx, m.ID)
	}
	k, err := c.from(m, "ack")
	if err != nil {
		return err
	}
	if k != m.k { // its subscription was replaced (a reconnect): by ID on the new one
		return c.acked(ctx, k, ackID, m.ID, nil)
	}
	return c.acked(ctx, k, ackMsg, m.ID, m.raw)
}

// AckID acknowledges the message id names (see Ack).
func (c *Consumer) AckID(ctx context.Context, id ID) error {
	if c != nil && c.subs != nil {
		s, err := c.sub(id.Topic, "ack", id.Cluster)
		if err != nil {
			return err
		}
		return s.AckID(ctx, id)
	}
	k, err := c.owner(id, "ack")
	if err != nil {
		return err
	}
	return c.acked(ctx, k, ackID, id, nil)
}

// AckCumulative acknowledges m and every message before it in its
// partition (on its cluster), for Exclusive and Failover subscriptions
// (ErrCumulativeAck otherwise). The other partitions are not touched. ctx
// as for Ack.
func (c *Consumer) AckCumulative(ctx context.Context, m *Message) error {
	if m == nil {
		return ErrNilMessage
	}
	return c.AckIDCumulative(ctx, m.ID)
}

// AckIDCumulative is AckCumulative by ID.
func (c *Consumer) AckIDCumulative(ctx context.Context, id ID) error {
	if c != nil && c.subs != nil {
		s, err := c.sub(id.Topic, "ack cumulative", id.Cluster)
		if err != nil {
			return err
		}
		return s.AckIDCumulative(ctx, id)
	}
	if !subTypes[c.cfg.subType].cumul {
		return clusterErr(id.Cluster, "ack cumulative", ErrCumulativeAck)
	}
	k, err := c.owner(id, "ack cumulative")
	if err != nil {
		return err
	}
	return c.acked(ctx, k, ackCumulative, id, nil)
}

// Nack tells m's cluster that m was not processed: it comes again after
// NackRedeliveryDelay. It never waits. Errors as for Ack.
func (c *Consumer) Nack(m *Message) error {
	if m == nil {
		return ErrNilMessage
	}
	if c != nil && c.subs != nil {
		s, err := c.subOf(m, "nack")
		if err != nil {
			return err
		}
		return s.Nack(m)
	}
	k, err := c.from(m, "nack")
	if err != nil {
		return err
	}
	s, pid, err := k.streamFor(m.ID)
	if err != nil {
		return clusterErr(k.name, "nack", err)
	}
	if m.raw != nil && k == m.k {
		s.Nack(m.raw)
	} else {
		s.NackID(pid)
	}
	c.nacked(k, m.ID)
	return nil
}

// NackID is Nack by ID.
func (c *Consumer) NackID(id ID) error {
	if c != nil && c.subs != nil {
		s, err := c.sub(id.Topic, "nack", id.Cluster)
		if err != nil {
			return err
		}
		return s.NackID(id)
	}
	k, err := c.owner(id, "nack")
	if err != nil {
		return err
	}
	s, pid, err := k.streamFor(id)
	if err != nil {
		return clusterErr(k.name, "nack", err)
	}
	s.NackID(pid)
	c.nacked(k, id)
	return nil
}

// errNoPulsarID is the cause for an ID without a Pulsar message ID.
var errNoPulsarID = errors.New("the ID has no Pulsar message ID")

// owner returns the cluster that id came from.
func (c *Consumer) owner(id ID, op string) (*cluster, error) {
	if c == nil {
		return nil, ErrClosed
	}
	s := c.set.Load()
	k := s.byName[id.Cluster]
	if k == nil {
		for _, m := range s.members {
			if m.name == id.Cluster {
				return nil, clusterErr(id.Cluster, op, errNotConnected)
			}
		}
		return nil, clusterErr(id.Cluster, op, ErrUnknownCluster)
	}
	if c.closed.Load() {
		return nil, clusterErr(id.Cluster, op, ErrClosed)
	}
	if id.Pulsar == nil {
		return nil, clusterErr(id.Cluster, op, errNoPulsarID)
	}
	return k, nil
}

// from returns the cluster m was read from: the one it names when this
// Consumer read it and that subscription is still open, else the one its
// ID names (see owner).
func (c *Consumer) from(m *Message, op string) (*cluster, error) {
	if k := m.k; k != nil && k.owner == c && m.ID.Cluster == k.name && m.ID.Pulsar != nil && !k.gone.Load() {
		if c.closed.Load() {
			return nil, clusterErr(k.name, op, ErrClosed)
		}
		return k, nil
	}
	return c.owner(m.ID, op)
}

// ackKind is which acknowledgement to send.
type ackKind uint8

const (
	ackMsg        ackKind = iota // Ack(raw)
	ackID                        // AckID(id)
	ackCumulative                // AckIDCumulative(id)
)

func (a ackKind) op() string {
	if a == ackCumulative {
		return "ack cumulative"
	}
	return "ack"
}

// send hands the acknowledgement to the pulsar-client-go consumer of
// id's partition on k.
func (k *cluster) send(a ackKind, id ID, raw pulsar.Message) error {
	s, pid, err := k.streamFor(id)
	if err != nil {
		return err
	}
	switch a {
	case ackMsg:
		return s.Ack(raw)
	case ackCumulative:
		return s.AckIDCumulative(pid)
	}
	return s.AckID(pid)
}

// streamFor returns the stream that reads id's partition on k, and id's
// Pulsar ID as that stream numbers it: a partition's own consumer
// numbers its one partition 0 (an ID made elsewhere may number it as
// the topic does).
func (k *cluster) streamFor(id ID) (stream, pulsar.MessageID, error) {
	var p *part
	if id.Partition >= 0 && id.Partition <= math.MaxInt32 {
		p = k.part(int32(id.Partition))
	}
	if p == nil {
		return nil, nil, fmt.Errorf("%w: partition %d (it reads %d)", errNoPartition, id.Partition, k.partCount())
	}
	pid := id.Pulsar
	if p.idx >= 0 && pid.PartitionIdx() != 0 {
		pid = pulsar.NewMessageID(pid.LedgerID(), pid.EntryID(), pid.BatchIdx(), 0)
	}
	return p.stream, pid, nil
}

// errNoPartition is the cause of an acknowledgement of a partition that
// the cluster's subscription does not read.
var errNoPartition = errors.New("no such partition read on the cluster")

// acked sends an acknowledgement, waiting at most until ctx ends when it
// waits for the broker (AckWithResponse), and counts and observes its
// outcome.
func (c *Consumer) acked(ctx context.Context, k *cluster, a ackKind, id ID, raw pulsar.Message) error {
	var err error
	if !c.cfg.ackWithResponse || ctx.Done() == nil {
		err = k.send(a, id, raw)
	} else {
		err = c.ackUntil(ctx, k, a, id, raw)
	}
	if err == nil {
		k.acked.Add(1)
	}
	if obs := c.cfg.observer; obs != nil {
		obs.OnAck(id, err)
	}
	return clusterErr(k.name, a.op(), err)
}

// ackUntil sends an acknowledgement on a goroutine of its own and waits
// for it until ctx ends. The goroutine ends when pulsar-client-go
// answers, at the latest when Close closes the cluster's consumer; Close
// waits for it.
func (c *Consumer) ackUntil(ctx context.Context, k *cluster, a ackKind, id ID, raw pulsar.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return ErrClosed
	}
	c.acks.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.acks.Done()
		done <- k.send(a, id, raw)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Consumer) nacked(k *cluster, id ID) {
	k.nacked.Add(1)
	if obs := c.cfg.observer; obs != nil {
		obs.OnNack(id)
	}
}
