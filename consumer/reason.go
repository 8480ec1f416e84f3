package consumer

import (
	"context"
	"errors"
	"strconv"
)

// ReasonCode is a stable name for why a call failed: an enumeration to
// switch on, log or count, instead of matching error text. Codes are only
// ever added.
type ReasonCode uint8

// Reason codes. Reason(err) returns one of them.
const (
	ReasonNone             ReasonCode = iota // err is nil
	ReasonOther                              // an error the package does not classify
	ReasonClosed                             // ErrClosed
	ReasonCanceled                           // the ctx was canceled
	ReasonDeadlineExceeded                   // the ctx's deadline passed
	ReasonBadOption                          // ErrBadOption, ErrNoTopic, ErrNoSubscription, ErrBadMax
	ReasonBadTopology                        // ErrBadTopology
	ReasonTopicNotFound                      // ErrTopicNotFound
	ReasonUnknownCluster                     // ErrUnknownCluster
	ReasonCumulativeAck                      // ErrCumulativeAck
	ReasonNilMessage                         // ErrNilMessage
	ReasonDecode                             // ErrDecode
	ReasonConsumerBusy                       // ErrConsumerBusy
	ReasonBroker                             // another refusal of a broker (*BrokerError)
)

var reasonNames = [...]string{
	ReasonNone:             "none",
	ReasonOther:            "other",
	ReasonClosed:           "closed",
	ReasonCanceled:         "canceled",
	ReasonDeadlineExceeded: "deadline_exceeded",
	ReasonBadOption:        "bad_option",
	ReasonBadTopology:      "bad_topology",
	ReasonTopicNotFound:    "topic_not_found",
	ReasonUnknownCluster:   "unknown_cluster",
	ReasonCumulativeAck:    "cumulative_ack",
	ReasonNilMessage:       "nil_message",
	ReasonDecode:           "decode",
	ReasonConsumerBusy:     "consumer_busy",
	ReasonBroker:           "broker",
}

// String returns the code's snake_case name, e.g. "consumer_busy": short,
// stable and of low cardinality, fit for a metric attribute.
func (r ReasonCode) String() string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// reasons maps sentinels to codes, in the order they are checked.
var reasons = []struct {
	err  error
	code ReasonCode
}{
	{ErrConsumerBusy, ReasonConsumerBusy},
	{ErrClosed, ReasonClosed},
	{context.Canceled, ReasonCanceled},
	{context.DeadlineExceeded, ReasonDeadlineExceeded},
	{ErrBadOption, ReasonBadOption},
	{ErrNoTopic, ReasonBadOption},
	{ErrNoSubscription, ReasonBadOption},
	{ErrBadMax, ReasonBadOption},
	{ErrBadTopology, ReasonBadTopology},
	{ErrTopicNotFound, ReasonTopicNotFound},
	{ErrUnknownCluster, ReasonUnknownCluster},
	{ErrCumulativeAck, ReasonCumulativeAck},
	{ErrNilMessage, ReasonNilMessage},
	{ErrDecode, ReasonDecode},
}

// Reason returns the stable code of err (of any call of this package):
// ReasonNone for nil, ReasonOther for an error it does not classify.
func Reason(err error) ReasonCode {
	if err == nil {
		return ReasonNone
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.code
		}
	}
	var be *BrokerError
	if errors.As(err, &be) {
		return ReasonBroker
	}
	return ReasonOther
}
