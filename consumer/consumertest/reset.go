package consumertest

import (
	"context"
	"fmt"

	"github.com/apache/pulsar-client-go/pulsar"
)

// positions is the fake's hook.Position: package consumer moves a
// subscription's cursor on a fake cluster with it (consumer.StartAfter,
// Consumer.SeekByID) where it moves a real one over the admin API.
type positions struct{ cs *Clusters }

// Partitions returns how many partitions the topic has on the cluster:
// the fake holds one topic, whatever its name.
func (p positions) Partitions(ctx context.Context, cluster, _ string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return p.cs.Cluster(cluster).Partitions(), nil
}

// ResetAfter moves the subscription on the cluster just after id (see
// resetLocked).
func (p positions) ResetAfter(ctx context.Context, cluster, _, subscription string, id pulsar.MessageID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.cs.mu.Lock()
	defer p.cs.mu.Unlock()
	return p.cs.clusterLocked(cluster).resetLocked(subscription, id)
}

// resetLocked moves subscription name, on the partition of id, just
// after id, as the broker's resetcursor with isExcluded does: the
// messages at or before it there count as acknowledged, the later ones
// not; the other partitions keep their cursor. A position inside a batch
// is its entry's (the fake has no batches). It makes the subscription
// when it does not exist (its other partitions start where its first
// Consumer's initial position says), and refuses a partition or message
// the cluster does not have (ErrNoPosition) and a subscription with a
// Consumer attached (ErrBusy), moving nothing. cs.mu is held.
func (c *Cluster) resetLocked(name string, id pulsar.MessageID) error {
	if id == nil {
		return fmt.Errorf("%w: no message ID (subscription %q on %q)", ErrNoPosition, name, c.name)
	}
	p, e := pos(id)
	if p < 0 || p >= len(c.logs) {
		return fmt.Errorf("%w: cluster %q has no partition %d (it has %d)", ErrNoPosition, c.name, p, len(c.logs))
	}
	if n := int64(len(c.logs[p])); id.LedgerID() != 1 || e < 0 || e >= n {
		return fmt.Errorf("%w: cluster %q has no message %d:%d on partition %d (%s)", ErrNoPosition, c.name, id.LedgerID(), e, p, span(n))
	}
	s := c.subs[name]
	if s != nil && s.open != nil {
		return fmt.Errorf("%w: %q on %q: the fake moves no cursor under a consumer", ErrBusy, name, c.name)
	}
	if s == nil {
		s = c.newSubscription(name)
	}
	s.unset[p] = false
	acked := make([]bool, e+1)
	for i := range acked {
		acked[i] = true
	}
	s.acked[p] = acked
	c.cs.record(Event{Op: OpReset, Cluster: c.name, Subscription: name, Partition: p, Entry: e})
	return nil
}

// span says which messages a partition of n messages has.
func span(n int64) string {
	if n == 0 {
		return "it has none"
	}
	return fmt.Sprintf("it has 1:0 to 1:%d", n-1)
}
