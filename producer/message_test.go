package producer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryMessageFieldReachesPulsar(t *testing.T) {
	seq := int64(7)
	at := time.Unix(1_900_000_000, 0)
	m := &Message{
		Key: "k", Value: []byte("v"), EventTime: at, OrderingKey: "ok",
		DeliverAt: at, ReplicationClusters: []string{"r1"}, SequenceID: &seq,
	}
	props := map[string]string{"a": "b"}
	var pm pulsar.ProducerMessage
	toPulsar(&pm, m, props)
	assert.Equal(t, pulsar.ProducerMessage{
		Key: "k", Payload: []byte("v"), Properties: props, EventTime: at, OrderingKey: "ok",
		DeliverAt: at, ReplicationClusters: []string{"r1"}, SequenceID: &seq,
	}, pm)

	// A reused ProducerMessage takes every field from the next message,
	// zero values included.
	toPulsar(&pm, &Message{Key: "k2", DeliverAfter: time.Second, DisableReplication: true}, nil)
	assert.Equal(t, pulsar.ProducerMessage{Key: "k2", Payload: emptyPayload, DeliverAfter: time.Second, DisableReplication: true}, pm)

	// toPulsar stores a field only when it differs: the same instant in
	// another location differs, and a cleared inflight's pm takes every
	// field again.
	f := &inflight{}
	toPulsar(&f.pm, m, props)
	f.clear()
	inUTC := &Message{Key: "k3", EventTime: at.UTC(), DeliverAt: at.UTC(), OrderingKey: "ok", SequenceID: &seq}
	toPulsar(&f.pm, inUTC, nil)
	assert.Equal(t, pulsar.ProducerMessage{Key: "k3", Payload: emptyPayload, EventTime: at.UTC(), OrderingKey: "ok", DeliverAt: at.UTC(), SequenceID: &seq}, f.pm)
	assert.Same(t, time.UTC, f.pm.EventTime.Location())
	assert.Same(t, time.UTC, f.pm.DeliverAt.Location())
}

// A reported inflight waits on its partition's free list, perhaps for
// long: clear must drop every reference to the caller's message that it
// holds, the rarely set fields included, and the ReplicationClusters that
// pulsar-client-go writes for a message that disables replication.
func TestClearDropsTheMessage(t *testing.T) {
	seq := int64(7)
	props := map[string]string{"a": "b"}
	for name, m := range map[string]*Message{
		"plain":               {Key: "k", Value: []byte("v")},
		"OrderingKey":         {Key: "k", OrderingKey: "ok"},
		"SequenceID":          {Key: "k", SequenceID: &seq},
		"ReplicationClusters": {Key: "k", ReplicationClusters: []string{"r1"}},
		"DisableReplication":  {Key: "k", DisableReplication: true},
	} {
		f := &inflight{}
		toPulsar(&f.pm, m, props)
		if m.DisableReplication {
			f.pm.ReplicationClusters = []string{"__local__"} // as pulsar-client-go does
		}
		f.ctx, f.msg, f.cb, f.cost, f.accepted = context.Background(), m, func(ID, *Message, error) {}, 1, true
		f.clear()
		assert.Nil(t, f.pm.Payload, name)
		assert.Empty(t, f.pm.Key, name)
		assert.Empty(t, f.pm.OrderingKey, name)
		assert.Nil(t, f.pm.SequenceID, name)
		assert.Nil(t, f.pm.ReplicationClusters, name)
		assert.Nil(t, f.ctx, name)
		assert.Nil(t, f.msg, name)
		assert.Nil(t, f.cb, name)
	}
}

func TestCheckNamesTheContradiction(t *testing.T) {
	neg := int64(-1)
	for want, m := range map[string]*Message{
		"NullValue":               {NullValue: true, Value: []byte("x")},
		"DeliverAfter -1s":        {DeliverAfter: -time.Second},
		"both DeliverAfter":       {DeliverAfter: time.Second, DeliverAt: time.Now()},
		"not after 1970":          {DeliverAt: time.Unix(0, 0)},
		"both DisableReplication": {DisableReplication: true, ReplicationClusters: []string{"a"}},
		"SequenceID -1":           {SequenceID: &neg},
	} {
		err := check(m)
		require.ErrorIs(t, err, ErrBadMessage, want)
		assert.ErrorContains(t, err, want)
	}
	zero := int64(0)
	for _, m := range []*Message{
		{}, {NullValue: true}, {DeliverAfter: time.Second}, {DeliverAt: time.Now()},
		{DisableReplication: true}, {ReplicationClusters: []string{"a"}}, {SequenceID: &zero},
	} {
		assert.NoError(t, check(m))
	}
}

type idOf struct {
	pulsar.MessageID
	ledger, entry int64
}

func (i idOf) LedgerID() int64 { return i.ledger }
func (i idOf) EntryID() int64  { return i.entry }

func TestDuplicateIsLedgerAndEntryMinusOne(t *testing.T) {
	assert.True(t, ID{MessageID: idOf{ledger: -1, entry: -1}}.Duplicate())
	assert.False(t, ID{MessageID: idOf{ledger: 7, entry: 0}}.Duplicate())
	assert.False(t, ID{}.Duplicate())
}

// pulsar-client-go v0.21.0 fails a message it cannot encrypt with this
// text (internal/commands.go around internal/crypto/producer_encryptor.go),
// wrapping no sentinel.
func TestEncryptionFailureIsNotWritten(t *testing.T) {
	upstream := fmt.Errorf("encryption of message failed, ProducerCryptoFailureAction is set to Fail. Error: %w",
		fmt.Errorf("ProducerCryptoFailureAction is set to Fail and error occurred in encrypting payload: %w", errors.New("no key")))
	e := (&cluster{name: "c"}).sendError(context.Background(), "k", 0, upstream, false)
	assert.True(t, NotWritten(e))
	assert.ErrorIs(t, e, ErrEncryption)
	assert.Equal(t, ReasonEncryption, Reason(e))
	assert.Equal(t, "encryption", ReasonEncryption.String())
}

func TestEveryWriterGetsItsOwnEncryptionInfo(t *testing.T) {
	e := &pulsar.ProducerEncryptionInfo{Keys: []string{"k"}}
	a, b := ownCopy(e), ownCopy(e)
	assert.NotSame(t, a, b)
	assert.Equal(t, *e, *a)
	a.Keys[0] = "changed"
	assert.Equal(t, "k", e.Keys[0])
	assert.Nil(t, ownCopy(nil))
}
