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
	l := &link{streams: []stream{s}, whole: true, probe: probe, close: func() {}}
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

// PartitionConnectFunc opens a fake stream on one partition of a
// cluster, at its first message when earliest; share is the cluster's
// share of MaxBuffered.
type PartitionConnectFunc func(ctx context.Context, cluster string, partition int, earliest bool, share int) (Stream, error)

// WithPartitionConnector makes New subscribe each partition with fn, a
// stream per partition as pulsar-client-go's consumers of partition
// topics; partitions returns the topic's partition count on a cluster
// now.
func WithPartitionConnector(fn PartitionConnectFunc, partitions func(cluster string) (int, error)) Opt {
	return optFunc(func(c *cfg) { c.connect = partConnector{fn, partitions} })
}

type partConnector struct {
	fn         PartitionConnectFunc
	partitions func(cluster string) (int, error)
}

func (f partConnector) connect(ctx context.Context, cl topology.Cluster, sc subConfig) (*link, error) {
	name := cl.Name
	n, err := f.partitions(name)
	if err != nil {
		return nil, clusterErr(name, "subscribe", err)
	}
	each := func(ctx context.Context, from, to int, earliest bool) ([]stream, error) {
		var out []stream
		for p := from; p < to; p++ {
			s, err := f.fn(ctx, name, p, earliest, sc.share)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	streams, err := each(ctx, 0, n, sc.position == Earliest)
	if err != nil {
		return nil, clusterErr(name, "subscribe", err)
	}
	return &link{
		streams: streams, partitioned: true, close: func() {},
		partitions: func() (int, error) { return f.partitions(name) },
		more: func(ctx context.Context, from, to int) ([]stream, error) {
			return each(ctx, from, to, true)
		},
	}, nil
}
