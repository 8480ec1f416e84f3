package kotel

import (
	"context"
	"errors"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/keyroute/keyroute/consumer"
)

// ackErrorType returns the error.type value of a failed acknowledgement:
// "canceled" and "deadline_exceeded" for a ctx that ended, "closed" for
// consumer.ErrClosed, else the Go type of the cause (inside a
// *consumer.ClusterError) as semconv.ErrorType names it: pulsar-client-go
// v0.21.0 reports "*pulsar.Error", or "*errors.errorString" for the errors
// it makes with errors.New (a closed consumer's among them). The consumer
// package has no reason codes for its acknowledgements, unlike the
// producer's producer.Reason.
func ackErrorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, consumer.ErrClosed):
		return "closed"
	}
	var ce *consumer.ClusterError
	if errors.As(err, &ce) && ce.Err != nil {
		err = ce.Err
	}
	return semconv.ErrorType(err).Value.AsString()
}
