package producer

import (
	"context"

	"github.com/keyroute/keyroute/topology"
)

// Writer is the writer interface, exported for the black-box tests.
type Writer = writer

// ConnectFunc opens fake writers for a cluster in tests.
type ConnectFunc func(ctx context.Context, cl topology.Cluster, partitionQueue int) ([]Writer, error)

type fakeConnector struct{ fn ConnectFunc }

func (f fakeConnector) connect(ctx context.Context, cl topology.Cluster, wc writerConfig) (*link, error) {
	ws, err := f.fn(ctx, cl, wc.maxPending)
	if err != nil {
		return nil, err
	}
	return &link{writers: ws, close: func() {}}, nil
}

// WithConnector makes New open clusters with fn instead of pulsar-client-go.
func WithConnector(fn ConnectFunc) Opt {
	return optFunc(func(c *cfg) { c.connect = fakeConnector{fn} })
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
