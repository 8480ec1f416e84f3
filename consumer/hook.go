package consumer

import (
	"context"

	"github.com/keyroute/keyroute/consumer/internal/hook"
	"github.com/keyroute/keyroute/topology"
)

// The fakes of package consumertest reach New through package
// internal/hook, so that they add nothing to this package's API: hook.Opt
// turns a fake's Connect and Position into an Opt.
func init() {
	hook.Opt = func(fn hook.Connect, pos hook.Position) any {
		return optFunc(func(c *cfg) { c.connect = hookConnector{conn: fn, pos: pos} })
	}
}

// hookConnector subscribes with a fake's Connect, and positions its
// subscriptions with the fake's Position (nil: none) in place of the
// admin API (see positionerFor).
type hookConnector struct {
	conn hook.Connect
	pos  hook.Position
}

func (f hookConnector) connect(ctx context.Context, cl topology.Cluster, sc subConfig) (*link, error) {
	conn, err := f.conn(ctx, hook.Sub{
		Cluster: cl.Name, Topic: sc.topic, Subscription: sc.subscription, Type: subTypes[sc.subType].typ,
		Earliest: sc.position == Earliest, Queue: sc.share,
	})
	if err != nil {
		return nil, clusterErr(cl.Name, "subscribe", err)
	}
	l := &link{streams: []stream{conn.Stream}, whole: true, probe: conn.Probe, close: conn.Close, backlog: conn.Backlog}
	if l.close == nil {
		l.close = func() {}
	}
	return l, nil
}

func (f hookConnector) positioner(cluster string) positioner {
	if f.pos == nil {
		return nil
	}
	return hookPositioner{pos: f.pos, cluster: cluster}
}

// hookPositioner is a fake's Position on one of its clusters.
type hookPositioner struct {
	pos     hook.Position
	cluster string
}

func (h hookPositioner) partitions(ctx context.Context, topic string) (int, error) {
	return h.pos.Partitions(ctx, h.cluster, topic)
}

// resetAfter moves the cursor; the fake finds the partition in id's
// Pulsar ID, so parts is not needed.
func (h hookPositioner) resetAfter(ctx context.Context, topic, sub string, _ int, id ID) error {
	return h.pos.ResetAfter(ctx, h.cluster, topic, sub, id.Pulsar)
}
