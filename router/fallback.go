package router

import "math"

// ClusterExcept is Cluster restricted to the members for which skip(i) is
// false (i indexes the members slice given to New): the member a key falls
// back to when its own is unavailable. Because rendezvous ranks every member
// per key, the fallback of a key is its second choice, and the keys of one
// unavailable member spread evenly over the others. It returns -1 when every
// member is skipped. It is slower than Cluster and meant for the rare path.
func (r *Router) ClusterExcept(h uint64, skip func(int) bool) int {
	best := -1
	var bestScore uint64
	bestWeighted := math.Inf(-1)
	for k, s := range r.seeds {
		if skip(r.index[k]) {
			continue
		}
		x := score(h, s)
		if r.weights != nil {
			u := float64(x>>11|1) * unit53
			if w := -r.weights[k] / math.Log(u); best < 0 || w > bestWeighted {
				best, bestWeighted = k, w
			}
			continue
		}
		if best < 0 || x > bestScore {
			best, bestScore = k, x
		}
	}
	if best < 0 {
		return -1
	}
	return r.index[best]
}
