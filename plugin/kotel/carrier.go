package kotel

import (
	"context"

	"github.com/keyroute/keyroute/producer"
)

// carrier is the propagation.TextMapCarrier that OnStart injects through:
// the message's Event itself, so that a message costs no carrier
// allocation (the propagator takes an interface, so a carrier of its own
// would escape to the heap on every message). It reads the message's
// properties until the first Set copies them into a new map, which it
// keeps in Token until inject takes it back: the message's own map is
// never written, and nothing is copied when the propagator writes nothing.
type carrier producer.Event

// inject writes ctx's propagation fields into a copy of ev's properties
// and returns the copy, or nil when the propagator writes nothing. It
// leaves ev.Token nil.
func (o *Observer) inject(ctx context.Context, ev *producer.Event) map[string]string {
	ev.Token = nil
	o.prop.Inject(ctx, (*carrier)(ev))
	dst, _ := ev.Token.(map[string]string)
	ev.Token = nil
	return dst
}

// props returns the map the carrier reads: the copy once there is one.
func (c *carrier) props() map[string]string {
	if dst, ok := c.Token.(map[string]string); ok {
		return dst
	}
	return c.Properties
}

func (c *carrier) Get(key string) string { return c.props()[key] }

func (c *carrier) Set(key, value string) {
	dst, ok := c.Token.(map[string]string)
	if !ok {
		dst = make(map[string]string, len(c.Properties)+2)
		for k, v := range c.Properties {
			dst[k] = v
		}
		c.Token = dst
	}
	dst[key] = value
}

func (c *carrier) Keys() []string {
	m := c.props()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
