package producer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

// A transaction checks a message as Send does: one that contradicts itself
// is refused at Txn.Send, nothing of it is staged, and the refusal says so.
func TestTxnSendChecksTheMessage(t *testing.T) {
	p := newTxnProducer(t, newFake(1), 1)
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	err = tx.Send(&producer.Message{Key: "k", NullValue: true, Value: []byte("x")})
	assert.ErrorIs(t, err, producer.ErrBadMessage)
	assert.True(t, producer.NotWritten(err))
	msgs, _ := tx.Len()
	assert.Equal(t, 0, msgs, "nothing staged")
	require.NoError(t, tx.Abort())
}

func TestTxnSendRefusalsAreNotWritten(t *testing.T) {
	p := newTxnProducer(t, newFake(1), 2)
	tx, err := p.BeginTxn(producer.TxnMaxMessages(2), producer.TxnSingleCluster())
	require.NoError(t, err)
	assert.True(t, producer.NotWritten(tx.Send(nil)), "nil message")
	c := p.Clusters()
	home := txnKeysOn(p, c[0], 3)
	require.NoError(t, tx.Send(&producer.Message{Key: home[0]}))
	err = tx.Send(&producer.Message{Key: txnKeysOn(p, c[1], 1)[0]})
	require.ErrorIs(t, err, producer.ErrTxnCrossCluster)
	assert.True(t, producer.NotWritten(err), "another cluster")
	require.NoError(t, tx.Send(&producer.Message{Key: home[1]}))
	err = tx.Send(&producer.Message{Key: home[2]})
	require.ErrorIs(t, err, producer.ErrTxnTooLarge)
	assert.True(t, producer.NotWritten(err), "too large")
	require.NoError(t, tx.Abort())
}
