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
	c := p.clusters[p.router.Cluster(h)]
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
		return c, pt, nil
	}
	alt, err := p.admit(ctx, c, h, key == "")
	if err != nil {
		return c, pt, err
	}
	if alt != c {
		pt = alt.parts[router.Partition(h, len(alt.parts))]
	}
	return alt, pt, nil
}
