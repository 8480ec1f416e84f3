package consumer

import (
	"context"
	"fmt"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Typed reads values of type T, decoded with the schema the Consumer was
// made with (the Schema option): the read side of the producer's
// Typed[T]. It is safe for concurrent use; ordering, acknowledgements and
// errors are the Consumer's.
type Typed[T any] struct {
	c *Consumer
}

// NewTyped returns a Typed over c, which must have a Schema (ErrBadOption
// otherwise).
func NewTyped[T any](c *Consumer) (*Typed[T], error) {
	if c == nil {
		return nil, ErrClosed
	}
	if c.cfg.schema == nil {
		return nil, fmt.Errorf("%w: NewTyped needs a Consumer made with the Schema option", ErrBadOption)
	}
	return &Typed[T]{c: c}, nil
}

// Decode decodes m's Value with the schema. A null value (m.NullValue)
// decodes to T's zero value. A Value the schema cannot decode is an
// ErrDecode error naming the message; acknowledge or nack m as you see
// fit (it stays unacknowledged otherwise).
func (t *Typed[T]) Decode(m *Message) (T, error) {
	var v T
	if m == nil {
		return v, ErrNilMessage
	}
	if m.NullValue {
		return v, nil
	}
	if err := decode(t.c.cfg.schema, m.Value, &v); err != nil {
		return v, fmt.Errorf("%w: message %s with the schema %q: %w", ErrDecode, m.ID, t.c.cfg.schema.GetSchemaInfo().Name, err)
	}
	return v, nil
}

// decode decodes b into v with s. pulsar-client-go v0.21.0's StringSchema
// decodes into a **string, aliasing b, and panics on a *string: a string
// is copied out of b here instead. A schema that panics is an error.
func decode[T any](s pulsar.Schema, b []byte, v *T) (err error) {
	if _, ok := s.(*pulsar.StringSchema); ok {
		if sv, ok := any(v).(*string); ok {
			*sv = string(b)
			return nil
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the schema's Decode panicked: %v", r)
		}
	}()
	return s.Decode(b, v)
}

// Receive takes the next message as Consumer.Receive does and decodes it.
// When decoding fails it returns the message with the ErrDecode error, so
// that the caller can acknowledge, nack or dead-letter it.
func (t *Typed[T]) Receive(ctx context.Context) (*Message, T, error) {
	m, err := t.c.Receive(ctx)
	if err != nil {
		var zero T
		return nil, zero, err
	}
	v, err := t.Decode(m)
	return m, v, err
}
