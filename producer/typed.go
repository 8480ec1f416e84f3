package producer

import (
	"context"
	"fmt"
)

// Typed sends values of type T, encoded with the schema the Producer was
// made with (the Schema option), so that callers never handle bytes. It is
// safe for concurrent use; outcomes, order and errors are the Producer's.
type Typed[T any] struct {
	p *Producer
}

// NewTyped returns a Typed over p, which must have a Schema (ErrBadOption
// otherwise).
func NewTyped[T any](p *Producer) (*Typed[T], error) {
	if p == nil {
		return nil, ErrNilProducer
	}
	if p.cfg.schema == nil {
		return nil, fmt.Errorf("%w: NewTyped needs a Producer made with the Schema option", ErrBadOption)
	}
	return &Typed[T]{p: p}, nil
}

// Message encodes v with the schema into a Message with key; a value the
// schema cannot encode is an ErrBadMessage error (and a Message that the
// Producer refuses with it).
func (t *Typed[T]) Message(key string, v T) (*Message, error) {
	b, err := t.p.cfg.schema.Encode(v)
	if err != nil {
		return &Message{Key: key, encodeErr: err}, fmt.Errorf("%w: encode with the schema %q: %w", ErrBadMessage, t.p.cfg.schema.GetSchemaInfo().Name, err)
	}
	return &Message{Key: key, Value: b}, nil
}

// Send encodes v and sends it as Producer.Send does.
func (t *Typed[T]) Send(ctx context.Context, key string, v T) (ID, error) {
	m, _ := t.Message(key, v) // a value that cannot be encoded is refused in its turn
	return t.p.Send(ctx, m)
}

// SendAsync encodes v and sends it as Producer.SendAsync does; a value
// that cannot be encoded is refused with ErrBadMessage, through cb in the
// key's order like any refusal.
func (t *Typed[T]) SendAsync(ctx context.Context, key string, v T, cb Callback) {
	m, _ := t.Message(key, v)
	t.p.SendAsync(ctx, m, cb)
}
