package consumer

import (
	"context"
	"reflect"

	"github.com/apache/pulsar-client-go/pulsar"
)

// wait blocks until a message comes on any cluster's channel, ctx ends,
// the Consumer closes (ErrClosed) or begin is closed (errSeekBegun). Go's
// select picks at random among the channels that are ready, so no cluster
// is favoured. Up to four clusters it is a plain select; beyond, a
// reflect.Select, which allocates: a wait is taken only when every
// cluster's channel is empty.
func (c *Consumer) wait(ctx context.Context, begin <-chan struct{}) (pulsar.ConsumerMessage, *cluster, error) {
	done := ctx.Done()
	var (
		cm pulsar.ConsumerMessage
		ok bool
		k  *cluster
	)
	ks := c.clusters
	switch len(ks) {
	case 1:
		select {
		case cm, ok = <-ks[0].in:
			k = ks[0]
		case <-done:
		case <-c.closing:
		case <-begin:
		}
	case 2:
		select {
		case cm, ok = <-ks[0].in:
			k = ks[0]
		case cm, ok = <-ks[1].in:
			k = ks[1]
		case <-done:
		case <-c.closing:
		case <-begin:
		}
	case 3:
		select {
		case cm, ok = <-ks[0].in:
			k = ks[0]
		case cm, ok = <-ks[1].in:
			k = ks[1]
		case cm, ok = <-ks[2].in:
			k = ks[2]
		case <-done:
		case <-c.closing:
		case <-begin:
		}
	case 4:
		select {
		case cm, ok = <-ks[0].in:
			k = ks[0]
		case cm, ok = <-ks[1].in:
			k = ks[1]
		case cm, ok = <-ks[2].in:
			k = ks[2]
		case cm, ok = <-ks[3].in:
			k = ks[3]
		case <-done:
		case <-c.closing:
		case <-begin:
		}
	default:
		cm, ok, k = c.waitMany(done, begin)
	}
	switch {
	case k != nil && ok:
		c.rotor.Store(k.idx + 1)
		return cm, k, nil
	case k != nil: // a closed channel: the cluster's consumer is gone
		return cm, nil, ErrClosed
	case c.closed.Load():
		return cm, nil, ErrClosed
	case ctx.Err() != nil:
		return cm, nil, ctx.Err()
	}
	return cm, nil, errSeekBegun
}

// waitMany is wait's select over any number of clusters.
func (c *Consumer) waitMany(done, begin <-chan struct{}) (pulsar.ConsumerMessage, bool, *cluster) {
	cases := make([]reflect.SelectCase, len(c.clusters), len(c.clusters)+3)
	for i, k := range c.clusters {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(k.in)}
	}
	for _, ch := range []<-chan struct{}{done, c.closing, begin} {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	i, v, ok := reflect.Select(cases)
	if i >= len(c.clusters) {
		return pulsar.ConsumerMessage{}, false, nil
	}
	if !ok {
		return pulsar.ConsumerMessage{}, false, c.clusters[i]
	}
	return v.Interface().(pulsar.ConsumerMessage), true, c.clusters[i]
}
