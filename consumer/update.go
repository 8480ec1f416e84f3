package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/keyroute/keyroute/topology"
)

// Update applies a new topology to the running Consumer, cluster by
// cluster (by name), while Receive and the others go on:
//
//   - a cluster added is subscribed as a late joiner: at Earliest, so that
//     an existing subscription resumes from its cursor and a new one
//     starts at the first message still stored (producers may write there
//     before the Consumer subscribes; see router/HANDOVER.md, section 9:
//     apply a change to consumers before producers). Update waits for it
//     as New does (StartTimeout); one that has not answered by then is
//     down and joins by itself.
//   - a cluster removed is still read until its subscription has no
//     backlog (every message acknowledged), asked every ProbeInterval over
//     its admin API, then closed: its markers and a moved key's earlier
//     messages are there. DrainTimeout bounds it: a cluster still holding
//     a backlog then (or one with no admin URL, whose backlog cannot be
//     asked) is closed anyway, and the Logger says so with the backlog
//     left, which stays on that cluster's subscription. Health reports it
//     with Draining set meanwhile.
//   - a cluster whose URLs, credentials, TLS or client settings changed
//     is reconnected: its subscription is closed and opened again on the
//     same subscription with the new settings, resuming from its cursor;
//     messages delivered and not yet acknowledged come again (an Ack of
//     one of them by ID goes to the new subscription).
//   - a weight change does nothing to a consumer.
//
// A topology that is invalid (ErrBadTopology, naming the cluster and
// field) is refused, and so is one that a cluster it adds or reconnects
// answers with an error (a missing topic, a refused subscription): the
// error names the cluster, the clusters added are closed again and those
// reconnected go back to their old settings, and the old topology keeps
// running. ctx bounds the wait for the clusters added or reconnected;
// when it ends first, Update returns an error matching ctx.Err() and
// undoes them likewise. With WithClients, topo must be the shared
// clients' topology (keyroute.ErrOtherTopology otherwise): update the
// Clients. With Topics, every topic's Consumer takes topo or none does
// (the error names the topic): see updateTopics. One Update runs at a
// time; it returns ErrClosed after Close.
func (c *Consumer) Update(ctx context.Context, topo *topology.Topology) error {
	if c == nil || c.closed.Load() {
		return ErrClosed
	}
	if err := topo.Validate(); err != nil { // a nil topo has no clusters
		return fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	if c.cfg.clients != nil {
		if err := c.cfg.clients.Check(topo); err != nil {
			return err
		}
	}
	if c.subs != nil {
		return c.updateTopics(ctx, topo)
	}
	return c.update(ctx, topo)
}

// update is Update without the check against the shared clients'
// topology: Clients.Update calls it, with their topology and the clusters
// it removes while producers leave them (keyroute.User).
func (c *Consumer) update(ctx context.Context, topo *topology.Topology) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := topo.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	c.updateMu.Lock()
	defer c.updateMu.Unlock()

	share := max(1, c.cfg.maxBuffered/len(topo.Clusters))
	c.setMu.Lock()
	cur := c.set.Load()
	byName := make(map[string]*member, len(cur.members))
	for _, m := range cur.members {
		byName[m.name] = m
	}
	var (
		added, kept, wait []*member
		changed           []reconnect
		undrained         []*member
	)
	for _, cl := range topo.Clusters {
		m := byName[cl.Name]
		if m == nil {
			nm, err := newMember(cl, share)
			if err != nil {
				c.setMu.Unlock()
				for _, a := range added {
					a.admin().close()
				}
				return err
			}
			nm.late = true
			added = append(added, nm)
			wait = append(wait, nm)
			kept = append(kept, nm)
			continue
		}
		if m.draining.Load() { // removed by an earlier Update, back before it drained
			undrained = append(undrained, m)
		}
		m.jmu.Lock()
		old := m.cl
		same := sameConnection(old, cl)
		if same {
			m.cl = cl // the weight, which a consumer does not use
		}
		m.jmu.Unlock()
		if !same {
			changed = append(changed, reconnect{m: m, old: old, to: cl})
			wait = append(wait, m)
		}
		kept = append(kept, m)
	}
	var removed []*member
	for _, m := range cur.members {
		if !slices.Contains(kept, m) && !m.draining.Load() {
			removed = append(removed, m)
		}
	}
	for _, m := range undrained {
		m.draining.Store(false)
		m.removed.Store(false)
	}
	// Added and reconnected clusters first, the removed still read as
	// they were: the removals wait for the others to be accepted.
	c.publish(c.withMembers(append(slices.Clone(kept), removed...)))
	c.setMu.Unlock()
	for _, r := range changed {
		c.redial(r.m, r.to)
	}
	for _, m := range wait {
		c.startAttempt(c.joinCtx, m)
	}
	if err := c.awaitJoins(ctx, wait, false); err != nil {
		c.undo(cur.members, added, changed, undrained)
		return err
	}

	c.setMu.Lock()
	now := time.Now()
	for _, m := range removed {
		m.removed.Store(true)
		if m.cur.Load() != nil {
			m.jmu.Lock()
			m.drainSince = now
			m.jmu.Unlock()
			m.draining.Store(true)
			c.log().Info("keyroute: cluster removed, read until its backlog is 0", "cluster", m.name, "bound", c.cfg.drainTimeout.String())
			continue
		}
		m.admin().close()
		c.log().Info("keyroute: cluster removed", "cluster", m.name)
	}
	c.publish(c.withMembers(kept))
	c.setMu.Unlock()
	return nil
}

// reconnect is a cluster whose connection settings an Update changes.
type reconnect struct {
	m       *member
	old, to topology.Cluster
}

// withMembers returns the member list of a set: kept (the topology's, in
// order), then every member of the current set draining. setMu is held.
func (c *Consumer) withMembers(kept []*member) []*member {
	out := slices.Clone(kept)
	for _, m := range c.set.Load().members {
		if m.draining.Load() && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// redial closes m's subscription, if open, and gives m the settings of
// cl: the next attempt subscribes with them, at Earliest.
func (c *Consumer) redial(m *member, cl topology.Cluster) {
	c.setMu.Lock()
	if c.joinsStopped { // Close closes the subscription
		c.setMu.Unlock()
		return
	}
	k := m.cur.Swap(nil)
	m.jmu.Lock()
	m.cl, m.late, m.err = cl, true, errNoAnswer
	m.jmu.Unlock()
	if k != nil {
		k.gone.Store(true)
		c.publish(c.set.Load().members)
	}
	c.setMu.Unlock()
	if a, err := newAdmin(cl); err == nil {
		m.adm.Swap(a).close()
	}
	if k != nil {
		// Its unacknowledged messages come again on the next
		// subscription; holds waiting on it end, reported.
		c.hold.forget(k, forgetClosed)
		k.close()
	}
	c.log().Info("keyroute: cluster reconnecting with new settings", "cluster", m.name)
}

// undo takes back what a refused Update did: the clusters it added leave
// (closed if they joined), those it reconnected go back to their old
// settings, and the set is members again.
func (c *Consumer) undo(members, added []*member, changed []reconnect, undrained []*member) {
	var closing []*cluster
	c.setMu.Lock()
	if c.joinsStopped { // Close closes the subscriptions
		c.setMu.Unlock()
		return
	}
	for _, m := range undrained {
		m.removed.Store(true)
		m.draining.Store(true)
	}
	for _, m := range added {
		m.removed.Store(true)
		if k := m.cur.Swap(nil); k != nil {
			k.gone.Store(true)
			closing = append(closing, k)
		}
	}
	c.publish(members)
	c.setMu.Unlock()
	for _, k := range closing {
		c.hold.forget(k, forgetClosed)
	}
	closeClusters(closing)
	for _, m := range added {
		m.admin().close()
	}
	for _, r := range changed {
		c.redial(r.m, r.old)
		c.startAttempt(c.joinCtx, r.m)
	}
}

// checkDrains asks, for every cluster draining with no check in flight,
// its subscription's backlog, and closes it once the backlog is 0 or
// DrainTimeout has passed; the monitor calls it every ProbeInterval.
func (c *Consumer) checkDrains(now time.Time) {
	for _, m := range c.set.Load().members {
		if !m.draining.Load() {
			continue
		}
		m.jmu.Lock()
		over := now.Sub(m.drainSince) >= c.cfg.drainTimeout
		m.jmu.Unlock()
		c.goOnce(&m.checking, func() {
			ctx, cancel := context.WithTimeout(c.joinCtx, operationTimeout(m))
			n, err := m.backlog(ctx, c.cfg)
			cancel()
			switch {
			case err == nil && n == 0:
				c.log().Info("keyroute: removed cluster drained, closed", "cluster", m.name)
				c.endDrain(m, true)
			case over:
				c.log().Warn("keyroute: removed cluster not drained within DrainTimeout, closed; its backlog stays on the subscription",
					"cluster", m.name, "backlog", n, "error", err, "bound", c.cfg.drainTimeout.String())
				c.endDrain(m, false)
			}
		})
	}
}

// errNoAdmin is a draining cluster's backlog error without an admin URL.
var errNoAdmin = errors.New("no admin URL: the backlog cannot be asked")

// endDrain takes a drained cluster out of the set and closes it;
// finished when it was read to the end (see holder.forget).
func (c *Consumer) endDrain(m *member, finished bool) {
	c.setMu.Lock()
	if c.joinsStopped || !m.draining.Load() { // Close closes it; an Update took it back
		c.setMu.Unlock()
		return
	}
	k := m.cur.Swap(nil)
	m.draining.Store(false)
	members := slices.DeleteFunc(slices.Clone(c.set.Load().members), func(x *member) bool { return x == m })
	if k != nil {
		k.gone.Store(true)
	}
	c.publish(members)
	c.setMu.Unlock()
	if k != nil {
		how := forgetClosed
		if finished {
			how = forgetFinished
		}
		c.hold.forget(k, how)
		k.close()
	}
	m.admin().close()
}
