package consumer

import (
	"errors"
	"strings"
)

// What this package knows of pulsar-client-go v0.21.0's internals, in one
// place: it reports a broker's refusal (CommandError) as a plain error
// whose text is "server error: <ServerError>: <message>"
// (pulsar/internal/connection.go), with no type to match. The e2e suite
// e2e/consumer checks a ConsumerBusy refusal of a real broker against it,
// so that a change of the pinned version that breaks it fails there.

// serverErrorPrefix starts the text of a broker's refusal.
const serverErrorPrefix = "server error: "

// BrokerError is a broker's refusal of a request (subscribe, seek, ...):
// Code is Pulsar's ServerError name (e.g. "ConsumerBusy",
// "SubscriptionNotFound", "NotAllowedError"). errors.Is(err,
// ErrConsumerBusy) holds for a ConsumerBusy refusal.
type BrokerError struct {
	Code string
	Err  error // pulsar-client-go's error
}

func (e *BrokerError) Error() string { return e.Err.Error() }

// Unwrap returns pulsar-client-go's error and, for ConsumerBusy,
// ErrConsumerBusy.
func (e *BrokerError) Unwrap() []error {
	if e.Code == "ConsumerBusy" {
		return []error{e.Err, ErrConsumerBusy}
	}
	return []error{e.Err}
}

// brokerError returns err as a *BrokerError when its text is a broker's
// refusal, else err.
func brokerError(err error) error {
	if err == nil {
		return nil
	}
	var be *BrokerError
	if errors.As(err, &be) {
		return err
	}
	msg := err.Error()
	i := strings.Index(msg, serverErrorPrefix)
	if i < 0 {
		return err
	}
	code, _, ok := strings.Cut(msg[i+len(serverErrorPrefix):], ":")
	if !ok || code == "" || strings.ContainsAny(code, " \t") {
		return err
	}
	return &BrokerError{Code: code, Err: err}
}
