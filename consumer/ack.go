package consumer

import (
	"context"
	"errors"
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
	if m.raw == nil {
		return c.AckID(ctx, m.ID)
	}
	k, err := c.owner(m.ID, "ack")
	if err != nil {
		return err
	}
	return c.acked(ctx, k, m.ID, "ack", func() error { return k.link.stream.Ack(m.raw) })
}

// AckID acknowledges the message id names (see Ack).
func (c *Consumer) AckID(ctx context.Context, id ID) error {
	k, err := c.owner(id, "ack")
	if err != nil {
		return err
	}
	return c.acked(ctx, k, id, "ack", func() error { return k.link.stream.AckID(id.Pulsar) })
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
	if !subTypes[c.cfg.subType].cumul {
		return clusterErr(id.Cluster, "ack cumulative", ErrCumulativeAck)
	}
	k, err := c.owner(id, "ack cumulative")
	if err != nil {
		return err
	}
	return c.acked(ctx, k, id, "ack cumulative", func() error { return k.link.stream.AckIDCumulative(id.Pulsar) })
}

// Nack tells m's cluster that m was not processed: it comes again after
// NackRedeliveryDelay. It never waits. Errors as for Ack.
func (c *Consumer) Nack(m *Message) error {
	if m == nil {
		return ErrNilMessage
	}
	k, err := c.owner(m.ID, "nack")
	if err != nil {
		return err
	}
	if m.raw != nil {
		k.link.stream.Nack(m.raw)
	} else {
		k.link.stream.NackID(m.ID.Pulsar)
	}
	c.nacked(k, m.ID)
	return nil
}

// NackID is Nack by ID.
func (c *Consumer) NackID(id ID) error {
	k, err := c.owner(id, "nack")
	if err != nil {
		return err
	}
	k.link.stream.NackID(id.Pulsar)
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
	k := c.byName[id.Cluster]
	if k == nil {
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

// acked runs ack, waiting at most until ctx ends when it waits for the
// broker (AckWithResponse), counts and observes its outcome.
func (c *Consumer) acked(ctx context.Context, k *cluster, id ID, op string, ack func() error) error {
	var err error
	if !c.cfg.ackWithResponse || ctx.Done() == nil {
		err = ack()
	} else {
		err = c.ackUntil(ctx, ack)
	}
	if err == nil {
		k.acked.Add(1)
	}
	if obs := c.cfg.observer; obs != nil {
		obs.OnAck(id, err)
	}
	return clusterErr(k.name, op, err)
}

// ackUntil runs ack on a goroutine of its own and waits for it until ctx
// ends. The goroutine ends when pulsar-client-go answers, at the latest
// when Close closes the cluster's consumer; Close waits for it.
func (c *Consumer) ackUntil(ctx context.Context, ack func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	c.ackMu.Lock()
	if c.closed.Load() {
		c.ackMu.Unlock()
		return ErrClosed
	}
	c.acks.Add(1)
	c.ackMu.Unlock()
	go func() {
		defer c.acks.Done()
		done <- ack()
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
