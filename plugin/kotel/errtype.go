package kotel

import (
	"context"
	"errors"
	"strconv"
	"strings"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/keyroute/keyroute/producer"
)

// sentinels name the errors a message commonly fails with, in the order
// they are checked.
var sentinels = []struct {
	err  error
	name string
}{
	{producer.ErrSendTimeout, "send_timeout"},
	{producer.ErrClosed, "closed"},
	{producer.ErrMessageTooLarge, "message_too_large"},
	{producer.ErrNilMessage, "nil_message"},
	{context.DeadlineExceeded, "context_deadline_exceeded"},
	{context.Canceled, "context_canceled"},
}

// errorType returns the error.type value for err: a short name for the
// SDK's sentinels and the ctx errors, else the Go type of the underlying
// cause as semconv.ErrorType names it (low cardinality by construction).
// Sentinels not in the table above (added to the producer later) get a name
// derived from their text: "producer: cluster down" gives "cluster_down".
func errorType(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	if se, ok := errors.AsType[*producer.SendError](err); ok {
		if se.Err != nil {
			return sentinelName(se.Err)
		}
		if se.Cause != nil {
			err = se.Cause
		}
	}
	return semconv.ErrorType(err).Value.AsString()
}

// sentinelName turns "producer: some thing (detail)" into "some_thing".
func sentinelName(err error) string {
	msg := strings.TrimPrefix(err.Error(), "producer: ")
	if i := strings.IndexAny(msg, "(:"); i >= 0 {
		msg = msg[:i]
	}
	b := make([]byte, 0, len(msg))
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b = append(b, c)
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		case len(b) > 0 && b[len(b)-1] != '_':
			b = append(b, '_')
		}
	}
	return strings.TrimSuffix(string(b), "_")
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
