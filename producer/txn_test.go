package producer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

var errBoom = errors.New("boom")

// stage sends one message per key (value "key/i") into tx.
func stage(t *testing.T, tx *producer.Txn, keys []string, rounds int) {
	t.Helper()
	for r := range rounds {
		for _, k := range keys {
			require.NoError(t, tx.Send(&producer.Message{Key: k, Value: fmt.Appendf(nil, "%s/%d", k, r)}))
		}
	}
}

// spread returns keys covering the first n clusters, three per cluster.
func spread(p *producer.Producer, n int) []string {
	var keys []string
	for _, c := range p.Clusters()[:n] {
		keys = append(keys, txnKeysOn(p, c, 3)...)
	}
	return keys
}

func TestTxnStagedAbortSendsNothing(t *testing.T) {
	fake := newFake(4)
	p := newTxnProducer(t, fake, 3)
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	stage(t, tx, spread(p, 3), 5)
	n, _ := tx.Len()
	require.Equal(t, 45, n)

	require.NoError(t, tx.Abort())
	require.NoError(t, tx.Abort(), "a second Abort is harmless")
	assert.Empty(t, fake.Events(), "no Pulsar transaction begun, nothing sent")

	assert.ErrorIs(t, tx.Send(&producer.Message{Key: "x"}), producer.ErrTxnDone)
	_, err = tx.Commit(context.Background())
	assert.ErrorIs(t, err, producer.ErrTxnDone)
	assert.Empty(t, fake.Events())
}

func TestTxnCommitWritesEveryMessageOnceInOrderOnItsPlacement(t *testing.T) {
	fake := newFake(4)
	p := newTxnProducer(t, fake, 5)
	keys := spread(p, 3)
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	stage(t, tx, keys, 10)
	res, err := tx.Commit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, p.Clusters()[:3], res.Clusters, "touched clusters, topology order")
	require.Len(t, res.IDs, len(keys)*10)
	for i, id := range res.IDs {
		c, part := p.Placement(keys[i%len(keys)])
		assert.Equal(t, c, id.Cluster)
		assert.Equal(t, part, id.Partition)
	}

	// One begin and one commit per touched cluster, none elsewhere.
	for i, c := range p.Clusters() {
		want := 0
		if i < 3 {
			want = 1
		}
		assert.Equal(t, want, count(fake, producertest.OpBegin, c), c)
		assert.Equal(t, want, count(fake, producertest.OpCommit, c), c)
	}
	assert.Zero(t, count(fake, producertest.OpAbort, ""))

	// Visible exactly once, in per-key order, on the key's placement.
	vis := visible(fake, p)
	perKey := map[string]int{}
	for cluster, parts := range vis {
		for part, ks := range parts {
			for _, k := range ks {
				c, pt := p.Placement(k)
				require.Equal(t, c, cluster, k)
				require.Equal(t, pt, part, k)
				perKey[k]++
			}
		}
	}
	for _, k := range keys {
		assert.Equal(t, 10, perKey[k], k)
	}
	// Sent alone (producertest panics on a transactional message that
	// pulsar-client-go would batch) and without a delivery time.
	for _, c := range p.Clusters() {
		for _, m := range fake.Cluster(c).Messages() {
			assert.True(t, m.DeliverAt.IsZero() && m.DeliverAfter == 0, "%s: delivery at %v", m.Key, m.DeliverAt)
		}
	}
	_, err = tx.Commit(context.Background())
	assert.ErrorIs(t, err, producer.ErrTxnDone)
	assert.ErrorIs(t, tx.Abort(), producer.ErrTxnDone)
}

func TestTxnMessageKeepsItsOwnDeliverAt(t *testing.T) {
	fake := newFake(1)
	p := newTxnProducer(t, fake, 1)
	at := time.Now().Add(time.Hour)
	require.NoError(t, p.RunInTxn(context.Background(), func(_ context.Context, tx *producer.Txn) error {
		return tx.Send(&producer.Message{Key: "k", DeliverAt: at})
	}))
	msgs := fake.Cluster("c1").Messages()
	require.Len(t, msgs, 1)
	assert.True(t, at.Equal(msgs[0].DeliverAt), "delivery at %v", msgs[0].DeliverAt)
}

func TestTxnEmptyCommitDoesNothing(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	res, err := tx.Commit(context.Background())
	require.NoError(t, err)
	assert.Empty(t, res.Clusters)
	assert.Empty(t, fake.Events())
}

func TestTxnTooLarge(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)

	tx, err := p.BeginTxn(producer.TxnMaxMessages(3))
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, tx.Send(&producer.Message{Key: fmt.Sprint(i)}))
	}
	err = tx.Send(&producer.Message{Key: "fourth"})
	require.ErrorIs(t, err, producer.ErrTxnTooLarge)
	var se *producer.SendError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "fourth", se.Key)
	assert.Contains(t, err.Error(), "TxnMaxMessages(3)")
	// The transaction stays usable with what it holds.
	res, err := tx.Commit(context.Background())
	require.NoError(t, err)
	assert.Len(t, res.IDs, 3)

	tx, err = p.BeginTxn(producer.TxnMaxBytes(10))
	require.NoError(t, err)
	require.NoError(t, tx.Send(&producer.Message{Key: "k", Value: []byte("123456789")}))
	err = tx.Send(&producer.Message{Key: "k", Value: []byte("x")})
	require.ErrorIs(t, err, producer.ErrTxnTooLarge)
	assert.Contains(t, err.Error(), "TxnMaxBytes(10)")
	require.NoError(t, tx.Abort())
}

func TestTxnSingleCluster(t *testing.T) {
	fake := newFake(4)
	p := newTxnProducer(t, fake, 3)
	c := p.Clusters()
	a, b := txnKeysOn(p, c[0], 2), txnKeysOn(p, c[1], 1)[0]
	tx, err := p.BeginTxn(producer.TxnSingleCluster())
	require.NoError(t, err)
	require.NoError(t, tx.Send(&producer.Message{Key: a[0]}))
	require.NoError(t, tx.Send(&producer.Message{Key: a[1]}))
	for range 20 {
		require.NoError(t, tx.Send(&producer.Message{Value: []byte("keyless")}))
	}
	err = tx.Send(&producer.Message{Key: b})
	require.ErrorIs(t, err, producer.ErrTxnCrossCluster)
	var ce *producer.CrossClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, producer.CrossClusterError{Key: b, Cluster: c[1], TxnCluster: c[0]}, *ce)
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", b))
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", c[0]))
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", c[1]))

	res, err := tx.Commit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{c[0]}, res.Clusters, "keyless messages stay on the transaction's cluster")
	assert.Equal(t, 22, count(fake, producertest.OpSend, c[0]))
}

func TestRunInTxn(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	c := p.Clusters()

	// An error from fn aborts: nothing sent, fn's error returned as is.
	err := p.RunInTxn(context.Background(), func(_ context.Context, tx *producer.Txn) error {
		stage(t, tx, spread(p, 2), 3)
		return errBoom
	})
	require.Equal(t, errBoom, err)
	assert.Empty(t, fake.Events())

	// fn runs once, even when the commit is retried.
	fake.Cluster(c[0]).FailBegins(errBoom)
	runs := 0
	err = p.RunInTxn(context.Background(), func(_ context.Context, tx *producer.Txn) error {
		runs++
		stage(t, tx, spread(p, 2), 3)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 1, runs)
	assert.Equal(t, 2, count(fake, producertest.OpCommit, c[0])+count(fake, producertest.OpCommit, c[1])-1, "one empty end, two real commits")
	assert.Len(t, visible(fake, p), 2)
}

func TestTxnDisabled(t *testing.T) {
	fake := newFake(2)
	fake.Cluster("c2").Transactions(false)
	p := newTxnProducer(t, fake, 2)
	_, err := p.BeginTxn()
	assert.ErrorIs(t, err, producer.ErrTxnDisabled)
	err = p.RunInTxn(context.Background(), func(context.Context, *producer.Txn) error { return nil })
	assert.ErrorIs(t, err, producer.ErrTxnDisabled)
	_, err = p.SendTxnBulk(context.Background(), []*producer.Message{{Key: "a"}}, 10)
	assert.ErrorIs(t, err, producer.ErrTxnDisabled)
}

func TestTxnBadOptions(t *testing.T) {
	p := newTxnProducer(t, newFake(1), 1)
	for _, o := range []producer.TxnOpt{producer.TxnTimeout(0), producer.TxnMaxMessages(0),
		producer.TxnMaxBytes(0), producer.TxnRetries(-1)} {
		_, err := p.BeginTxn(o)
		assert.ErrorIs(t, err, producer.ErrBadOption)
	}
	_, err := p.SendTxnBulk(context.Background(), nil, 0)
	assert.ErrorIs(t, err, producer.ErrBadOption)
}

func TestTxnAfterClose(t *testing.T) {
	fake := newFake(1)
	p := newTxnProducer(t, fake, 1)
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	require.NoError(t, tx.Send(&producer.Message{Key: "a"}))
	require.NoError(t, p.Close(context.Background()))
	_, err = tx.Commit(context.Background())
	assert.ErrorIs(t, err, producer.ErrClosed)
	assert.ErrorIs(t, err, producer.ErrTxnAborted)
	_, err = p.BeginTxn()
	assert.ErrorIs(t, err, producer.ErrClosed)
	assert.Empty(t, fake.Events())
}
