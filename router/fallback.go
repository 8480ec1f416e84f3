package router

// ClusterExcept is Cluster restricted to the members for which skip(i) is
// false (i indexes the members slice given to New): the member a key falls
// back to when its own is unavailable. Because rendezvous ranks every member
// per slot, the fallback of a key is its slot's second choice, and the keys
// of one unavailable member spread evenly over the others. It returns -1
// when every member is skipped. It ranks the members afresh on every call,
// so it is slower than Cluster and meant for the rare path.
func (r *Router) ClusterExcept(h uint64, skip func(int) bool) int {
	return r.rank(slotValue(Slot(h)), skip)
}
