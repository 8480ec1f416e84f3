package producer

import (
	"context"

	"github.com/keyroute/keyroute/producer/internal/hook"
	"github.com/keyroute/keyroute/topology"
)

// The fakes of package producertest reach New through package
// internal/hook, so that they add nothing to this package's API: hook.Opt
// turns a fake's Connect into an Opt.
func init() {
	hook.Opt = func(fn hook.Connect) any { return hookOpt{fn} }
}

// hookOpt makes New open clusters with a fake's Connect.
type hookOpt struct{ fn hook.Connect }

func (o hookOpt) apply(c *cfg) { c.connect = hookConnector(o.fn) }

// hookConnector opens clusters with a fake's Connect.
type hookConnector hook.Connect

func (f hookConnector) connect(ctx context.Context, cl topology.Cluster, wc writerConfig) (*link, error) {
	conn, err := f(ctx, cl.Name)
	if err != nil {
		return nil, err
	}
	l := &link{writers: conn.Writers, close: conn.Close, probe: conn.Probe, partitions: conn.Partitions}
	if conn.OpenPartitions != nil {
		l.openFrom = func(_ context.Context, from int) ([]writer, error) { return conn.OpenPartitions(from) }
	}
	if l.close == nil {
		l.close = func() {}
	}
	if wc.transactions {
		l.newTxn = conn.NewTxn
		if conn.BulkWriters != nil {
			l.openBulk = func(context.Context) ([]writer, error) { return conn.BulkWriters() }
		}
	}
	return l, nil
}
