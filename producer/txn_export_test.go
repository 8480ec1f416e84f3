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

type fakeTxnConnector struct {
	fn      TxnConnectFunc
	onClose func(cluster string)
}

func (f fakeTxnConnector) connect(ctx context.Context, cl topology.Cluster, _ writerConfig) (*link, error) {
	ws, nt, err := f.fn(ctx, cl)
	if err != nil {
		return nil, err
	}
	l := &link{writers: ws, close: func() {}, newTxn: nt}
	if f.onClose != nil {
		l.close = func() { f.onClose(cl.Name) }
	}
	return l, nil
}

// WithTxnConnector makes New open clusters with fn instead of
// pulsar-client-go, transactions included; onClose (if given) is called
// when a cluster's client is closed.
func WithTxnConnector(fn TxnConnectFunc, onClose ...func(cluster string)) Opt {
	f := fakeTxnConnector{fn: fn}
	if len(onClose) > 0 {
		f.onClose = onClose[0]
	}
	return optFunc(func(c *cfg) { c.connect = f })
}

// SendAlone is the DeliverAt that transactional messages carry.
var SendAlone = sendAlone
