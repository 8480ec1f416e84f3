package consumer

import (
	"context"
	"errors"
	"reflect"

	"github.com/apache/pulsar-client-go/pulsar"
)

// errWake ends a wait when the hand-over released held messages: the
// take serves them.
var errWake = errors.New("consumer: held messages released")

// wait blocks until a message comes on any part's channel, ctx ends,
// the Consumer closes (ErrClosed), begin is closed (errSeekBegun) or the
// hand-over released messages (errWake) or the cluster set changes
// (errSetChanged: look again). Go's select picks at random among the
// channels that are ready, so no partition is favoured. Up to four parts
// it is a plain select; beyond, a reflect.Select, which allocates: a wait
// is taken only when every part's channel is empty.
func (c *Consumer) wait(ctx context.Context, begin <-chan struct{}) (pulsar.ConsumerMessage, *part, error) {
	done, wake := ctx.Done(), c.hold.wake
	var (
		cm    pulsar.ConsumerMessage
		ok    bool
		k     *part
		woken bool
	)
	s := c.set.Load()
	ks, changed := s.parts, s.changed
	switch len(ks) {
	case 0:
		select {
		case <-done:
		case <-c.closing:
		case <-begin:
		case <-wake:
			woken = true
		case <-changed:
		}
	case 1:
		select {
		case cm, ok = <-ks[0].in:
			k = ks[0]
		case <-done:
		case <-c.closing:
		case <-begin:
		case <-wake:
			woken = true
		case <-changed:
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
		case <-wake:
			woken = true
		case <-changed:
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
		case <-wake:
			woken = true
		case <-changed:
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
		case <-wake:
			woken = true
		case <-changed:
		}
	default:
		cm, ok, k, woken = c.waitMany(ks, done, begin, wake, changed)
	}
	switch {
	case k != nil && ok:
		c.rotor.Store(k.at.Load() + 1)
		return cm, k, nil
	case k != nil && k.k.gone.Load(): // closed with its subscription, which has left the set
		return cm, nil, errSetChanged
	case k != nil: // a closed channel: the cluster's consumer is gone
		return cm, nil, ErrClosed
	case c.closed.Load():
		return cm, nil, ErrClosed
	case ctx.Err() != nil:
		return cm, nil, ctx.Err()
	case woken:
		return cm, nil, errWake
	}
	select {
	case <-changed:
		return cm, nil, errSetChanged
	default:
	}
	return cm, nil, errSeekBegun
}

// maxPlainWait is the most parts wait selects on without reflect.
const maxPlainWait = 4

// errSetChanged ends a wait on a cluster set that was replaced: the take
// looks again.
var errSetChanged = errors.New("consumer: cluster set changed")

// waitMany is wait's select over any number of parts; woken is true
// when wake ended it.
func (c *Consumer) waitMany(ks []*part, done, begin, wake, changed <-chan struct{}) (cm pulsar.ConsumerMessage, ok bool, k *part, woken bool) {
	cases := make([]reflect.SelectCase, len(ks), len(ks)+5)
	for i, k := range ks {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(k.in)}
	}
	for _, ch := range []<-chan struct{}{done, c.closing, begin, changed, wake} {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	i, v, ok := reflect.Select(cases)
	if i >= len(ks) {
		return cm, false, nil, i == len(cases)-1
	}
	if !ok {
		return cm, false, ks[i], false
	}
	return v.Interface().(pulsar.ConsumerMessage), true, ks[i], false
}
