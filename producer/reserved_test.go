package producer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

// An application message may not carry the hand-over's properties
// (HANDOVER.md section 4): Send, SendAsync and a transaction refuse it,
// naming the property, with one not-written outcome, and nothing reaches
// the cluster.
func TestReservedPropertiesAreRefused(t *testing.T) {
	fake := newFake(2)
	p := newProducer(t, fake, 2, producer.Transactions(true), producer.TxnPrebegin(0))
	bad := func() *producer.Message {
		return &producer.Message{Key: "k", Properties: map[string]string{"a": "1", "keyroute-from": "0:1:2:-1:c1", "keyroute-pid": "x"}}
	}
	checkErr := func(t *testing.T, err error) {
		t.Helper()
		require.ErrorIs(t, err, producer.ErrBadMessage)
		assert.True(t, producer.NotWritten(err))
		assert.Contains(t, err.Error(), `"keyroute-from"`) // the first reserved name, sorted
	}

	_, err := p.Send(context.Background(), bad())
	checkErr(t, err)

	calls := 0
	done := make(chan error, 2)
	p.SendAsync(context.Background(), bad(), func(_ producer.ID, _ *producer.Message, err error) {
		calls++
		done <- err
	})
	checkErr(t, <-done)
	require.NoError(t, p.Flush(context.Background()))
	assert.Equal(t, 1, calls, "exactly one outcome")

	txn, err := p.BeginTxn()
	require.NoError(t, err)
	checkErr(t, txn.Send(bad()))
	require.NoError(t, txn.Abort())

	for _, c := range p.Clusters() {
		assert.Empty(t, fake.Cluster(c).Messages(), c)
	}
	// Other names, and a name that only contains the prefix, are the
	// application's.
	_, err = p.Send(context.Background(), &producer.Message{Key: "k", Properties: map[string]string{"my-keyroute-x": "1", "Keyroute-x": "1"}})
	require.NoError(t, err)
	assert.False(t, errors.Is(err, producer.ErrBadMessage))
}
