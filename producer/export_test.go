package producer

import (
	"context"

	"github.com/keyroute/keyroute/topology"
)

// Writer is the writer interface, exported for the black-box tests.
type Writer = writer

// ConnectFunc opens fake writers for a cluster in tests.
type ConnectFunc func(ctx context.Context, cl topology.Cluster, partitionQueue int) ([]Writer, error)

type fakeConnector struct {
	fn    ConnectFunc
	probe func(cluster string) error
}

func (f fakeConnector) connect(ctx context.Context, cl topology.Cluster, wc writerConfig) (*link, error) {
	ws, err := f.fn(ctx, cl, wc.maxPending)
	if err != nil {
		return nil, err
	}
	l := &link{writers: ws, close: func() {}}
	if f.probe != nil {
		l.probe = func() error { return f.probe(cl.Name) }
	}
	return l, nil
}

// WithConnector makes New open clusters with fn instead of pulsar-client-go,
// and probe them with probe (if given; else they are never probed).
func WithConnector(fn ConnectFunc, probe ...func(cluster string) error) Opt {
	f := fakeConnector{fn: fn}
	if len(probe) > 0 {
		f.probe = probe[0]
	}
	return optFunc(func(c *cfg) { c.connect = f })
}

// Held reports the buffer held by each cluster, in topology order.
func (p *Producer) Held() (msgs, bytes []int64) {
	for _, c := range p.clusters {
		m, b := c.budget.held()
		msgs = append(msgs, m)
		bytes = append(bytes, b)
	}
	return msgs, bytes
}
