package producer

import (
	"context"
	"runtime"

	"github.com/keyroute/keyroute/router"
)

// keylessRun is how many consecutive keyless messages go to one partition
// before the next placement, so that they still fill batches.
const keylessRun = 64

// snapshot is the Producer's routing state, replaced whole and atomically
// (Producer.snap) by a join and by a topology change, never modified: a
// sender reads it once per message, with no lock.
type snapshot struct {
	router *router.Router
	// clusters in topology order, as router indexes them. A cluster that
	// has not joined is a stand-in (see join.go).
	clusters []*cluster
	// epoch counts the topology changes applied (HANDOVER.md section 1).
	epoch uint64
	// moves holds, by slot, the state of each slot that a change moved
	// (see handover.go); nil while no change has moved one, so that the
	// steady path pays one nil check.
	moves []*slotMove
}

// route returns key's own cluster and partition, whatever their health.
func (p *Producer) route(key string) (*cluster, *partition) {
	c, pt, _ := p.place(p.snap.Load(), key)
	return c, pt
}

// place is route under s that also returns the key hash.
func (p *Producer) place(s *snapshot, key string) (*cluster, *partition, uint64) {
	var h uint64
	if key == "" {
		h = router.KeylessHash(p.keyless.Add(1) / keylessRun)
	} else {
		h = router.Hash(key)
	}
	c := s.clusters[s.router.Cluster(h)]
	return c, c.parts[router.Partition(h, len(c.parts))], h
}

// pick is where a message with key goes now under s: its own cluster and
// partition, or while that cluster is down, what the down policy says (see
// admit). On error it returns the key's own cluster and partition, for the
// error to name. It also returns the key hash.
func (p *Producer) pick(ctx context.Context, s *snapshot, key string) (*cluster, *partition, uint64, error) {
	c, pt, h := p.place(s, key)
	if err := ctx.Err(); err != nil {
		return c, pt, h, err
	}
	if !c.health.down.Load() {
		if pt.idx >= 0 {
			return c, pt, h, nil
		}
		// c is the stand-in of a cluster that is joining (see join.go).
		c, pt = p.placeJoined(h)
		return c, pt, h, nil
	}
	alt, err := p.admit(ctx, s, c, h, key == "")
	if err != nil {
		return c, pt, h, err
	}
	if alt == c {
		// It waited for c to come up (WaitUp): c may have joined meanwhile.
		alt, pt = p.placeJoined(h)
		return alt, pt, h, nil
	}
	return alt, alt.parts[router.Partition(h, len(alt.parts))], h, nil
}

// placeJoined returns the cluster and partition of h from the snapshot.
// A cluster is marked up just before it replaces its stand-in there (see
// retire), so a stand-in that is up is one whose cluster is being swapped
// in: placeJoined waits that instant out. A stand-in is down otherwise,
// and is returned as it is.
func (p *Producer) placeJoined(h uint64) (*cluster, *partition) {
	for {
		s := p.snap.Load()
		c := s.clusters[s.router.Cluster(h)]
		pt := c.parts[router.Partition(h, len(c.parts))]
		if pt.idx >= 0 || c.health.down.Load() {
			return c, pt
		}
		runtime.Gosched()
	}
}
