package consumer

import (
	"context"

	"github.com/keyroute/keyroute/consumer/internal/hook"
	"github.com/keyroute/keyroute/topology"
)

// The fakes of package consumertest reach New through package
// internal/hook, so that they add nothing to this package's API: hook.Opt
// turns a fake's Connect into an Opt.
func init() {
	hook.Opt = func(fn hook.Connect) any { return optFunc(func(c *cfg) { c.connect = hookConnector(fn) }) }
}

// hookConnector subscribes with a fake's Connect.
type hookConnector hook.Connect

func (f hookConnector) connect(ctx context.Context, cl topology.Cluster, sc subConfig) (*link, error) {
	conn, err := f(ctx, hook.Sub{
		Cluster: cl.Name, Topic: sc.topic, Subscription: sc.subscription, Type: subTypes[sc.subType].typ,
		Earliest: sc.position == Earliest, Queue: sc.share,
	})
	if err != nil {
		return nil, clusterErr(cl.Name, "subscribe", err)
	}
	l := &link{stream: conn.Stream, probe: conn.Probe, close: conn.Close, backlog: conn.Backlog}
	if l.close == nil {
		l.close = func() {}
	}
	return l, nil
}
