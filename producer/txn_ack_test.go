package producer_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

// fakeAck is a consumed message's acknowledgement: it records the
// transaction it was made in, and the fake's events at that moment.
type fakeAck struct {
	cluster string
	fake    *producertest.Clusters
	err     error

	mu     sync.Mutex
	txns   []uint64
	events int // len(fake.Events()) when acknowledged
}

func (a *fakeAck) Cluster() string { return a.cluster }

func (a *fakeAck) AckWithTxn(txn pulsar.Transaction) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.txns = append(a.txns, txn.GetTxnID().LeastSigBits)
	a.events = len(a.fake.Events())
	return a.err
}

// txnOn returns the number of the transaction op happened in on cluster.
func txnOn(fake *producertest.Clusters, op producertest.Op, cluster string) (n uint64, at int) {
	for i, e := range fake.Events() {
		if e.Op == op && e.Cluster == cluster {
			return e.Txn, i
		}
	}
	return 0, -1
}

func TestTxnAckIsMadeInItsClustersTransactionBeforeTheCommit(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 3)
	c := p.Clusters()
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	stage(t, tx, txnKeysOn(p, c[0], 2), 3)
	onFirst := &fakeAck{cluster: c[0], fake: fake}
	onlyAcked := &fakeAck{cluster: c[2], fake: fake} // a cluster touched only by an ack
	require.NoError(t, tx.Ack(onFirst))
	require.NoError(t, tx.Ack(onlyAcked))
	res, err := tx.Commit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{c[0], c[2]}, res.Clusters)
	assert.Len(t, res.IDs, 6)

	for _, a := range []*fakeAck{onFirst, onlyAcked} {
		began, _ := txnOn(fake, producertest.OpBegin, a.cluster)
		committed, at := txnOn(fake, producertest.OpCommit, a.cluster)
		require.NotZero(t, began, a.cluster)
		assert.Equal(t, []uint64{began}, a.txns, "acknowledged once, in %s's transaction", a.cluster)
		assert.Equal(t, began, committed)
		assert.Less(t, a.events, at+1, "acknowledged before %s's commit", a.cluster)
	}
	sends := count(fake, producertest.OpAck, c[0])
	assert.Equal(t, 6, sends)
	assert.Zero(t, count(fake, producertest.OpBegin, c[1]), "an untouched cluster begins nothing")
}

func TestTxnAckThatFailsAbortsTheTransaction(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	c := p.Clusters()
	tx, err := p.BeginTxn(producer.TxnRetries(0))
	require.NoError(t, err)
	stage(t, tx, txnKeysOn(p, c[1], 1), 2)
	require.NoError(t, tx.Ack(&fakeAck{cluster: c[1], fake: fake, err: errBoom}))
	_, err = tx.Commit(context.Background())
	require.ErrorIs(t, err, producer.ErrTxnAborted)
	require.ErrorIs(t, err, errBoom)
	var ce *producer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, c[1], ce.Cluster)
	assert.Zero(t, count(fake, producertest.OpCommit, ""), "nothing commits")
	assert.Equal(t, 1, count(fake, producertest.OpAbort, c[1]))
}

func TestTxnAckRefusesWhatItCannotStage(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	c := p.Clusters()
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	assert.ErrorIs(t, tx.Ack(nil), producer.ErrNilMessage)
	err = tx.Ack(&fakeAck{cluster: "elsewhere", fake: fake})
	assert.ErrorIs(t, err, keyroute.ErrUnknownCluster)
	assert.ErrorContains(t, err, `"elsewhere"`)

	single, err := p.BeginTxn(producer.TxnSingleCluster())
	require.NoError(t, err)
	require.NoError(t, single.Ack(&fakeAck{cluster: c[0], fake: fake}))
	err = single.Ack(&fakeAck{cluster: c[1], fake: fake})
	var cce *producer.CrossClusterError
	require.ErrorAs(t, err, &cce)
	assert.Equal(t, c[1], cce.Cluster)
	assert.ErrorContains(t, err, "acknowledgement")
	require.NoError(t, single.Abort())
	assert.ErrorIs(t, single.Ack(&fakeAck{cluster: c[0], fake: fake}), producer.ErrTxnDone)
	assert.Empty(t, fake.Events(), "nothing begun")
}

// overlapAck records whether acknowledgements of one transaction ever
// run at once (pulsar-client-go v0.21.0 cannot take that: see ackAll).
type overlapAck struct {
	fakeAck
	inflight *atomic.Int32
	overlap  *atomic.Bool
}

func (a *overlapAck) AckWithTxn(txn pulsar.Transaction) error {
	if a.inflight.Add(1) > 1 {
		a.overlap.Store(true)
	}
	for range 100 {
		runtime.Gosched() // leave room for another to start
	}
	a.inflight.Add(-1)
	return a.fakeAck.AckWithTxn(txn)
}

func TestTxnAcksOfOneTransactionRunOneAtATime(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	c := p.Clusters()
	var inflight atomic.Int32
	var overlap atomic.Bool
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	for range 16 {
		require.NoError(t, tx.Ack(&overlapAck{fakeAck: fakeAck{cluster: c[0], fake: fake}, inflight: &inflight, overlap: &overlap}))
	}
	_, err = tx.Commit(context.Background())
	require.NoError(t, err)
	assert.False(t, overlap.Load())
}
