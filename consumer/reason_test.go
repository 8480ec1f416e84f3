package consumer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pulsar-client-go's text for a broker's refusal becomes a *BrokerError
// with Pulsar's code; ConsumerBusy matches ErrConsumerBusy.
func TestBrokerError(t *testing.T) {
	busy := errors.New("server error: ConsumerBusy: Exclusive consumer is already connected")
	err := clusterErr("east", "subscribe", brokerError(busy))
	var be *BrokerError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "ConsumerBusy", be.Code)
	assert.ErrorIs(t, err, ErrConsumerBusy)
	assert.ErrorIs(t, err, busy)
	assert.Equal(t, ReasonConsumerBusy, Reason(err))

	other := brokerError(fmt.Errorf("wrapped: %w", errors.New("server error: NotAllowedError: no")))
	require.ErrorAs(t, other, &be)
	assert.Equal(t, "NotAllowedError", be.Code)
	assert.NotErrorIs(t, other, ErrConsumerBusy)
	assert.Equal(t, ReasonBroker, Reason(other))

	plain := errors.New("connection refused")
	assert.Same(t, plain, brokerError(plain))
	assert.Nil(t, brokerError(nil))
}

func TestReason(t *testing.T) {
	for err, want := range map[error]ReasonCode{
		nil:                                   ReasonNone,
		errors.New("x"):                       ReasonOther,
		clusterErr("a", "ack", ErrClosed):     ReasonClosed,
		fmt.Errorf("x: %w", context.Canceled): ReasonCanceled,
		context.DeadlineExceeded:              ReasonDeadlineExceeded,
		ErrNoTopic:                            ReasonBadOption,
		fmt.Errorf("%w: ReceiveBatch", ErrBadMax): ReasonBadOption,
		ErrBadTopology: ReasonBadTopology,
		clusterErr("a", "check topic", ErrTopicNotFound): ReasonTopicNotFound,
		clusterErr("a", "ack", ErrUnknownCluster):        ReasonUnknownCluster,
		ErrCumulativeAck: ReasonCumulativeAck,
		ErrNilMessage:    ReasonNilMessage,
		ErrDecode:        ReasonDecode,
	} {
		assert.Equal(t, want, Reason(err), "%v", err)
	}
	assert.Equal(t, "consumer_busy", ReasonConsumerBusy.String())
	assert.Equal(t, "reason(200)", ReasonCode(200).String())
}
