package consumer

import (
	"context"

	"github.com/keyroute/keyroute/topology"
)

// Stream is the stream interface, exported for the black-box tests.
type Stream = stream

// ConnectFunc opens a fake stream on a cluster in tests; probe (may be
// nil) is its health probe.
type ConnectFunc func(ctx context.Context, cl topology.Cluster, share int) (s Stream, probe func() error, err error)

type fakeConnector struct{ fn ConnectFunc }

func (f fakeConnector) connect(ctx context.Context, cl topology.Cluster, sc subConfig) (*link, error) {
	s, probe, err := f.fn(ctx, cl, sc.share)
	if err != nil {
		return nil, clusterErr(cl.Name, "subscribe", err)
	}
	l := &link{stream: s, probe: probe, close: func() {}}
	if p, ok := s.(interface{ Partitions() (int, error) }); ok { // partition discovery
		n, err := p.Partitions()
		if err != nil {
			return nil, clusterErr(cl.Name, "subscribe", err)
		}
		l.parts, l.partitions = n, p.Partitions
	}
	return l, nil
}

// WithConnector makes New subscribe with fn instead of pulsar-client-go.
func WithConnector(fn ConnectFunc) Opt {
	return optFunc(func(c *cfg) { c.connect = fakeConnector{fn} })
}
