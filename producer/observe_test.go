package producer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

// pairObserver checks that every message's OnDone gets the Event its
// OnStart got, still holding what OnStart left in it: Events are recycled,
// and one must never serve two messages in flight at once.
type pairObserver struct {
	mu     sync.Mutex
	live   map[string]*producer.Event // by key, between OnStart and OnDone
	done   map[string]producer.Event  // by key: a copy made in OnDone
	faults []string
}

func newPairObserver() *pairObserver {
	return &pairObserver{live: map[string]*producer.Event{}, done: map[string]producer.Event{}}
}

func (o *pairObserver) OnStart(_ context.Context, ev *producer.Event) map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ev.Token != nil || ev.Err != nil || ev.ID != (producer.ID{}) {
		o.faults = append(o.faults, fmt.Sprintf("%s: Event not zero at OnStart: %+v", ev.Key, *ev))
	}
	if v, ok := ev.Properties["key"]; ev.Properties != nil && (!ok || v != ev.Key) {
		o.faults = append(o.faults, fmt.Sprintf("%s: another message's properties at OnStart: %v", ev.Key, ev.Properties))
	}
	if _, dup := o.live[ev.Key]; dup {
		o.faults = append(o.faults, ev.Key+": second OnStart")
	}
	o.live[ev.Key] = ev
	ev.Token = ev.Key
	return nil
}

func (o *pairObserver) OnDone(ev *producer.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ev.Token != ev.Key {
		o.faults = append(o.faults, fmt.Sprintf("%s: OnDone got another message's Event (token %v)", ev.Key, ev.Token))
	}
	if o.live[ev.Key] != ev {
		o.faults = append(o.faults, ev.Key+": OnDone got another Event than OnStart")
	}
	if _, dup := o.done[ev.Key]; dup {
		o.faults = append(o.faults, ev.Key+": second OnDone")
	}
	delete(o.live, ev.Key)
	o.done[ev.Key] = *ev
}

// Many messages in flight at once, some held unacknowledged while others
// complete and their Events are recycled, through SendAsync with and
// without a callback and Send, some failing: each gets one OnStart and one
// OnDone, with its own Event and outcome. Every fourth message has
// properties: a recycled Event must not show those of its last message.
func TestObservedMessagesKeepTheirEvent(t *testing.T) {
	fake := newFake(3)
	fake.Cluster("c2").Hold() // held until the end
	obs := newPairObserver()
	p := newProducer(t, fake, 3, producer.Observe(obs))
	boom := errors.New("boom")
	fake.Cluster("c3").Partition(0).FailSends(boom)

	const n = 3000
	o := newOutcomes(t)
	ops := map[string]producer.Op{}
	for i := range n {
		key := fmt.Sprintf("k-%d", i)
		c, _ := p.Placement(key)
		m := &producer.Message{Key: key}
		if i%4 == 0 {
			m.Properties = map[string]string{"key": key}
		}
		switch {
		case i%3 == 0 && c != "c2": // Send would wait for the held acks
			ops[key] = producer.OpSend
			_, _ = p.Send(context.Background(), m)
		case i%3 == 1:
			ops[key] = producer.OpSendAsync
			p.SendAsync(context.Background(), m, nil)
		default:
			ops[key] = producer.OpSendAsync
			o.expect(1)
			p.SendAsync(context.Background(), m, o.cb)
		}
	}
	for part := range 3 {
		fake.Cluster("c2").Partition(part).Ack()
	}
	o.wait(t)
	require.NoError(t, p.Flush(context.Background()))

	obs.mu.Lock()
	defer obs.mu.Unlock()
	assert.Empty(t, obs.faults)
	assert.Empty(t, obs.live, "messages with OnStart and no OnDone")
	require.Len(t, obs.done, n)
	for key, ev := range obs.done {
		c, part := p.Placement(key)
		assert.Equal(t, ops[key], ev.Op, key)
		assert.Equal(t, c, ev.Cluster, key)
		assert.Equal(t, part, ev.Partition, key)
		assert.False(t, ev.Start.IsZero(), key)
		var i int
		_, _ = fmt.Sscanf(key, "k-%d", &i)
		if i%4 == 0 {
			assert.Equal(t, map[string]string{"key": key}, ev.Properties, key)
		} else {
			assert.Nil(t, ev.Properties, key)
		}
		if c == "c3" && part == 0 {
			assert.ErrorIs(t, ev.Err, boom, key)
			continue
		}
		assert.NoError(t, ev.Err, key)
		assert.Equal(t, c, ev.ID.Cluster, key)
	}
}

// startObserver records each Event's Start at OnDone.
type startObserver struct {
	mu     sync.Mutex
	starts []time.Time
}

func (o *startObserver) OnStart(context.Context, *producer.Event) map[string]string { return nil }

func (o *startObserver) OnDone(ev *producer.Event) {
	o.mu.Lock()
	o.starts = append(o.starts, ev.Start)
	o.mu.Unlock()
}

// Event.Start lies between the call and its outcome.
func TestEventStartIsTheHandOver(t *testing.T) {
	rec := &startObserver{}
	p := newProducer(t, newFake(2), 2, producer.Observe(rec))
	before := time.Now()
	for i := range 100 {
		_, err := p.Send(context.Background(), &producer.Message{Key: fmt.Sprintf("k-%d", i)})
		require.NoError(t, err)
	}
	after := time.Now()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.starts, 100)
	for _, s := range rec.starts {
		assert.False(t, s.Before(before) || s.After(after), "Start %v not within [%v, %v]", s, before, after)
	}
}
