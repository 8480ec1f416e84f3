package kotel

import (
	"errors"
	"strconv"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/keyroute/keyroute/producer"
)

// errorType returns the error.type value for err: the name of its
// producer.Reason code ("send_timeout", "closed", "deadline_exceeded",
// ...), stable and of low cardinality by construction; for an error the SDK
// has no code for, the Go type of the underlying cause as semconv.ErrorType
// names it.
func errorType(err error) string {
	switch r := producer.Reason(err); r {
	case producer.ReasonOther, producer.ReasonBroker:
		var se *producer.SendError
		if errors.As(err, &se) && se.Cause != nil {
			err = se.Cause
		}
		return semconv.ErrorType(err).Value.AsString()
	default:
		return r.String()
	}
}

// formatID formats id as producer.ID.String does, with one allocation.
func formatID(id producer.ID) string {
	var buf [96]byte
	b := append(buf[:0], id.Cluster...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(id.Partition), 10)
	b = append(b, '/')
	if id.MessageID == nil {
		b = append(b, '-')
		return string(b)
	}
	b = strconv.AppendInt(b, id.MessageID.LedgerID(), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, id.MessageID.EntryID(), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(id.MessageID.BatchIdx()), 10)
	return string(b)
}
