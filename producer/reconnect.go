package producer

import (
	"fmt"
	"slices"

	"github.com/keyroute/keyroute/topology"
)

// Reconnecting a kept cluster. An Update that changes a kept cluster's
// client settings (topology.SameClient: ServiceURL, Auth, TLS, Client)
// or its Producer settings reconnects it with the hand-over
// machinery of a change, as if the cluster were handed over from an old
// owner to a new one of the same name:
//
//  1. The new connection is opened first, as for an added cluster
//     (connectAdded, join): a new joinState for the new settings, which
//     shares the running cluster's budget and health. With shared
//     keyroute.Clients its writers are opened on the client that
//     Clients.Client now returns.
//  2. In the change's snapshot swap, a new *cluster over the new writers
//     takes the old one's place. planChange compares owners by identity,
//     so every slot of the cluster moves from the old *cluster to the new
//     one: each old partition that was written gets a marker behind what
//     was handed to it, the cluster's keyed messages are held until that
//     marker's callback (every earlier message of the partition then has
//     its final outcome), and are then written through the new writers,
//     tagged with the marker's position (HANDOVER.md 5.2, 5.3). Keyless
//     messages are not held: they have no order to keep. Keys of other
//     clusters are not held.
//  3. Once the hand-overs ended and every outcome of the old writers is
//     reported, the old writers and connection close (watch,
//     closeDrained): its own client if the Producer made it, or its hold
//     on the shared client (Clients.Acquire), which Clients then closes.
//
// On one topic partition, a message written through the new connection
// is persisted after every message of the old one that had an outcome,
// so the hold alone keeps a key's order. The marker and tags still go
// out: they cost one message per partition and a tag until the first
// acknowledgement, a reader that follows HANDOVER.md passes them at once
// (the origin lies before the tagged message in the same partition), and
// they keep the order when the new connection finds another partition
// count (the keys then move between partitions, as in 5.5).
//
// The hold ends at the marker's callback, which comes once every message
// handed to the old writer has its outcome: when the new connection has
// the same partition count (the keys keep their partition), it ends there
// also if the marker failed (an old connection that stopped answering:
// its messages end at their send timeout), and the keys go on through the
// new connection, untagged, as nothing is owed on another partition;
// HandoverTimeout and OnClusterDown decide only when the old writer gives
// no outcome at all. With another partition count, a failed marker is
// handed over again, as for any change (HANDOVER.md 5.2).
//
// A new connection that answers with an error refuses the change
// (ErrConnect, naming the cluster); the old connection goes on. One that
// has not answered within StartTimeout refuses it too when the cluster is
// connected (a working connection is not traded for one that may never
// answer: its keys would follow OnClusterDown meanwhile); a cluster that
// never connected is replaced down, as an added cluster is added down,
// and joins when the new connection answers.

// reconnection returns the joinState of kept cluster c under cl, its new
// settings, or nil when cl changes no more than c's Weight.
func (p *Producer) reconnection(c *cluster, cl topology.Cluster, topo *topology.Topology) *joinState {
	field := changedField(c.join.cl, cl)
	if field == "" {
		return nil
	}
	maxMsgs, maxBytes := p.cfg.share(topo, cl.Weight)
	js := p.newJoinState(cl, maxMsgs, maxBytes)
	js.budget, js.health, js.replaces = c.budget, c.health, c
	p.log().Info("keyroute: cluster reconnects", "cluster", cl.Name, "changed", field)
	return js
}

// errNotAnswered is the connect error of a reconnection that did not
// answer within StartTimeout.
func errNotAnswered(js *joinState, bound string) error {
	return connectError(js, fmt.Errorf("%w within StartTimeout (%s): the cluster goes on over its old connection", errNoAnswer, bound))
}

// replace puts the cluster of js, a reconnection, in byName in place of
// the one it replaces (the current one: a join may have swapped it since
// Update began), whose joinState is done with, and returns that one.
// Called by apply with joinMu held.
func (p *Producer) replace(js *joinState, byName map[string]*cluster) *cluster {
	old := byName[js.cl.Name]
	js.replaces = old
	old.join.gone = true // an attempt of a stand-in closes what it opens
	return old
}

// sameSpots marks the hand-overs of ch from a reconnected cluster whose
// new connection has the same partition count (see handover.sameSpot).
// byName holds the change's clusters.
func sameSpots(ch *change, byName map[string]*cluster) {
	for _, ho := range ch.handovers {
		old := ho.from.c
		if !slices.Contains(ch.replaced, old) {
			continue
		}
		c := byName[old.name]
		ho.sameSpot = c.parts[0].idx >= 0 && len(c.parts) == len(old.parts)
	}
}
