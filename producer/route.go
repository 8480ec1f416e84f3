package producer

import (
	"context"

	"github.com/keyroute/keyroute/router"
)

// keylessRun is how many consecutive keyless messages go to one partition
// before the next placement, so that they still fill batches.
const keylessRun = 64

// route returns key's own cluster and partition, whatever their health.
func (p *Producer) route(key string) (*cluster, *partition) {
	c, pt, _ := p.place(key)
	return c, pt
}

// place is route that also returns the key hash.
func (p *Producer) place(key string) (*cluster, *partition, uint64) {
	var h uint64
	if key == "" {
		h = router.KeylessHash(p.keyless.Add(1) / keylessRun)
	} else {
		h = router.Hash(key)
	}
	c := p.all()[p.router.Cluster(h)]
	return c, c.parts[router.Partition(h, len(c.parts))], h
}

// pick is where a message with key goes now: its own cluster and
// partition, or while that cluster is down, what the down policy says (see
// admit). On error it returns the key's own cluster and partition, for the
// error to name.
func (p *Producer) pick(ctx context.Context, key string) (*cluster, *partition, error) {
	c, pt, h := p.place(key)
	if err := ctx.Err(); err != nil {
		return c, pt, err
	}
	if !c.health.down.Load() {
		if pt.idx >= 0 {
			return c, pt, nil
		}
		// c is the stand-in of a cluster that joined since place read it
		// (see join.go): the cluster is up once it has joined.
		c = p.all()[p.router.Cluster(h)]
		return c, c.parts[router.Partition(h, len(c.parts))], nil
	}
	alt, err := p.admit(ctx, c, h, key == "")
	if err != nil {
		return c, pt, err
	}
	if alt == c {
		// It waited for c to come up (WaitUp): c may have joined meanwhile.
		alt = p.all()[p.router.Cluster(h)]
	}
	apt := alt.parts[router.Partition(h, len(alt.parts))]
	if apt.idx < 0 { // not joined: up only once joined, so never seen here
		return c, pt, ErrClusterDown
	}
	return alt, apt, nil
}
