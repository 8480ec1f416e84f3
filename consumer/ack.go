package consumer

import "errors"

// Ack acknowledges m on its cluster. With AckGrouping (the default) the
// acknowledgement is queued and sent with others, and Ack does not block;
// with AckWithResponse Ack waits for the broker, for as long as the
// cluster is unreachable (see AckWithResponse). It returns ErrNilMessage for nil, and a
// *ClusterError (ErrUnknownCluster, ErrClosed, or pulsar-client-go's
// error) naming the cluster otherwise.
func (c *Consumer) Ack(m *Message) error {
	if m == nil {
		return ErrNilMessage
	}
	if m.raw == nil {
		return c.AckID(m.ID)
	}
	k, err := c.owner(m.ID, "ack")
	if err != nil {
		return err
	}
	return c.acked(k, m.ID, k.link.stream.Ack(m.raw), "ack")
}

// AckID acknowledges the message id names (see Ack).
func (c *Consumer) AckID(id ID) error {
	k, err := c.owner(id, "ack")
	if err != nil {
		return err
	}
	return c.acked(k, id, k.link.stream.AckID(id.Pulsar), "ack")
}

// AckCumulative acknowledges m and every message before it in its
// partition (on its cluster), for Exclusive and Failover subscriptions
// (ErrCumulativeAck otherwise). The other partitions are not touched.
func (c *Consumer) AckCumulative(m *Message) error {
	if m == nil {
		return ErrNilMessage
	}
	return c.AckIDCumulative(m.ID)
}

// AckIDCumulative is AckCumulative by ID.
func (c *Consumer) AckIDCumulative(id ID) error {
	if !subTypes[c.cfg.subType].cumul {
		return clusterErr(id.Cluster, "ack cumulative", ErrCumulativeAck)
	}
	k, err := c.owner(id, "ack cumulative")
	if err != nil {
		return err
	}
	return c.acked(k, id, k.link.stream.AckIDCumulative(id.Pulsar), "ack cumulative")
}

// Nack tells m's cluster that m was not processed: it comes again after
// NackRedeliveryDelay. Errors as for Ack.
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
	var k *cluster
	if i := id.idx - 1; i >= 0 && i < len(c.clusters) && c.clusters[i].name == id.Cluster {
		k = c.clusters[i]
	} else if k = c.byName[id.Cluster]; k == nil {
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

func (c *Consumer) acked(k *cluster, id ID, err error, op string) error {
	if err == nil {
		k.acked.Add(1)
	}
	if obs := c.cfg.observer; obs != nil {
		obs.OnAck(id, err)
	}
	return clusterErr(k.name, op, err)
}

func (c *Consumer) nacked(k *cluster, id ID) {
	k.nacked.Add(1)
	if obs := c.cfg.observer; obs != nil {
		obs.OnNack(id)
	}
}
