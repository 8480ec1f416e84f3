package producer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

// recObserver records every event it sees and gives each message a
// "trace" property holding its key.
type recObserver struct {
	mu     sync.Mutex
	starts map[string]int              // by key
	dones  map[string][]producer.Event // by key
}

func newRecObserver() *recObserver {
	return &recObserver{starts: map[string]int{}, dones: map[string][]producer.Event{}}
}

func (o *recObserver) OnStart(_ context.Context, ev *producer.Event) map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.starts[ev.Key]++
	props := map[string]string{"trace": ev.Key}
	for k, v := range ev.Properties {
		props[k] = v
	}
	return props
}

func (o *recObserver) OnDone(ev *producer.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dones[ev.Key] = append(o.dones[ev.Key], *ev)
}

// done returns the one outcome of key, failing unless there was exactly one
// start and one outcome.
func (o *recObserver) done(t *testing.T, key string) producer.Event {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	require.Equal(t, 1, o.starts[key], "OnStart calls for %q", key)
	require.Len(t, o.dones[key], 1, "OnDone calls for %q", key)
	return o.dones[key][0]
}

func TestTxnObservedCommit(t *testing.T) {
	fake := newFake(3)
	obs := newRecObserver()
	p := newTxnProducer(t, fake, 3, producer.Observe(obs))
	keys := spread(p, 3)
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	own := map[string]string{"own": "kept"}
	for _, k := range keys {
		require.NoError(t, tx.Send(&producer.Message{Key: k, Value: []byte(k), Properties: own}))
	}
	res, err := tx.Commit(context.Background())
	require.NoError(t, err)

	for i, k := range keys {
		ev := obs.done(t, k)
		cluster, part := p.Placement(k)
		assert.Equal(t, producer.OpSendTxn, ev.Op)
		assert.Equal(t, "send_txn", ev.Op.String())
		assert.Equal(t, cluster, ev.Cluster)
		assert.Equal(t, part, ev.Partition)
		assert.NoError(t, ev.Err)
		assert.Equal(t, res.IDs[i], ev.ID, "key %q", k)
	}
	assert.Equal(t, len(keys), count(fake, producertest.OpSend, ""))
	sent := 0
	for _, c := range p.Clusters() {
		for _, m := range fake.Cluster(c).Messages() {
			sent++
			assert.Equal(t, map[string]string{"trace": m.Key, "own": "kept"}, m.Properties, "the observer's properties are sent")
		}
	}
	assert.Equal(t, len(keys), sent)
	assert.Equal(t, map[string]string{"own": "kept"}, own, "the message's own map is untouched")
}

func TestTxnObservedPartialCommit(t *testing.T) {
	fake := newFake(2)
	obs := newRecObserver()
	p := newTxnProducer(t, fake, 3, producer.Observe(obs))
	c := p.Clusters()
	fake.Cluster(c[1]).FailCommits(errBoom)
	keys := spread(p, 3)
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	stage(t, tx, keys, 1)
	res, err := tx.Commit(context.Background())
	var pce *producer.PartialCommitError
	require.ErrorAs(t, err, &pce)

	for i, k := range keys {
		ev := obs.done(t, k)
		if ev.Cluster == c[1] {
			assert.ErrorIs(t, ev.Err, errBoom, "key %q on the failed cluster", k)
			assert.Zero(t, ev.ID)
			continue
		}
		assert.NoError(t, ev.Err, "key %q on a committed cluster", k)
		assert.Equal(t, res.IDs[i], ev.ID)
	}
}

func TestTxnObservedAbortAndRetry(t *testing.T) {
	t.Run("abort", func(t *testing.T) {
		fake := newFake(2)
		obs := newRecObserver()
		p := newTxnProducer(t, fake, 2, producer.Observe(obs))
		c := p.Clusters()
		fake.Cluster(c[1]).FailSendAt(1, errBoom)
		keys := spread(p, 2)
		tx, err := p.BeginTxn()
		require.NoError(t, err)
		stage(t, tx, keys, 1)
		_, err = tx.Commit(context.Background())
		require.ErrorIs(t, err, producer.ErrTxnAborted)
		for _, k := range keys {
			ev := obs.done(t, k)
			assert.ErrorIs(t, ev.Err, producer.ErrTxnAborted, "key %q", k)
		}
	})
	t.Run("retried attempt is one message", func(t *testing.T) {
		fake := newFake(2)
		obs := newRecObserver()
		p := newTxnProducer(t, fake, 2, producer.Observe(obs))
		c := p.Clusters()
		fake.Cluster(c[0]).FailBegins(errors.New("coordinator not ready"))
		key := txnKeysOn(p, c[0], 1)[0]
		tx, err := p.BeginTxn()
		require.NoError(t, err)
		require.NoError(t, tx.Send(&producer.Message{Key: key}))
		_, err = tx.Commit(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, count(fake, producertest.OpBeginFail, c[0]), "the first attempt failed")
		require.Equal(t, 1, count(fake, producertest.OpBegin, c[0]), "the retry began")
		assert.NoError(t, obs.done(t, key).Err)
	})
}

func TestTxnObservedBulk(t *testing.T) {
	fake := newFake(2)
	obs := newRecObserver()
	p := newTxnProducer(t, fake, 2, producer.Observe(obs))
	c := p.Clusters()
	fake.Cluster(c[1]).FailCommits(errBoom)
	msgs := make([]*producer.Message, 40)
	for i := range msgs {
		msgs[i] = &producer.Message{Key: fmt.Sprintf("bulk-%d", i)} // one message per key
	}
	_, err := p.SendTxnBulk(context.Background(), msgs, 5)
	require.Error(t, err)
	require.NotEmpty(t, obs.starts)
	// Every message of a transaction that committed has its ID; every
	// other one that started has its transaction's error. The bulk stops at
	// the first failure, so some never start.
	for _, m := range msgs {
		obs.mu.Lock()
		started := obs.starts[m.Key]
		obs.mu.Unlock()
		if started == 0 {
			continue
		}
		ev := obs.done(t, m.Key)
		assert.Equal(t, producer.OpSendTxn, ev.Op)
		if cl, _ := p.Placement(m.Key); cl == c[1] {
			assert.Error(t, ev.Err, m.Key)
			continue
		}
		if ev.Err == nil {
			assert.NotZero(t, ev.ID, m.Key)
			assert.Equal(t, c[0], ev.ID.Cluster)
		}
	}
}
