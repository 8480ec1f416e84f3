package producer

import (
	"context"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/topology"
)

// NewTxnFunc begins a fake Pulsar transaction on one cluster in tests.
type NewTxnFunc func(timeout time.Duration) (pulsar.Transaction, error)

// TxnConnectFunc opens fake writers and a fake transaction opener for a
// cluster in tests; a nil NewTxnFunc means transactions are off there.
type TxnConnectFunc func(ctx context.Context, cl topology.Cluster) ([]Writer, NewTxnFunc, error)

type fakeTxnConnector struct{ fn TxnConnectFunc }

func (f fakeTxnConnector) connect(ctx context.Context, cl topology.Cluster, _ writerConfig) (*link, error) {
	ws, nt, err := f.fn(ctx, cl)
	if err != nil {
		return nil, err
	}
	return &link{writers: ws, close: func() {}, newTxn: nt}, nil
}

// WithTxnConnector makes New open clusters with fn instead of
// pulsar-client-go, transactions included.
func WithTxnConnector(fn TxnConnectFunc) Opt {
	return optFunc(func(c *cfg) { c.connect = fakeTxnConnector{fn} })
}

// SendAlone is the DeliverAt that transactional messages carry.
var SendAlone = sendAlone
