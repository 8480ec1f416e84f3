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

// WithTopicConnector is WithConnector for fakes that serve several
// topics: fn gets the topic besides.
func WithTopicConnector(fn func(ctx context.Context, cl topology.Cluster, topic string, share int) (Stream, func() error, error)) Opt {
	return optFunc(func(c *cfg) { c.connect = topicConnector(fn) })
}

type topicConnector func(ctx context.Context, cl topology.Cluster, topic string, share int) (Stream, func() error, error)

func (f topicConnector) connect(ctx context.Context, cl topology.Cluster, sc subConfig) (*link, error) {
	return fakeConnector{func(ctx context.Context, cl topology.Cluster, share int) (Stream, func() error, error) {
		return f(ctx, cl, sc.topic, share)
	}}.connect(ctx, cl, sc)
}

// WithConnector makes New subscribe with fn instead of pulsar-client-go.
func WithConnector(fn ConnectFunc) Opt {
	return optFunc(func(c *cfg) { c.connect = fakeConnector{fn} })
}
