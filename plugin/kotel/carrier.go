package kotel

// carrier is a propagation.TextMapCarrier over a message's properties that
// copies them on the first Set, so that the message's own map is never
// written and nothing is copied when the propagator has nothing to write.
type carrier struct {
	src map[string]string // the message's properties; read only
	dst map[string]string // the copy, nil until the first Set
}

func (c *carrier) Get(key string) string {
	if c.dst != nil {
		return c.dst[key]
	}
	return c.src[key]
}

func (c *carrier) Set(key, value string) {
	if c.dst == nil {
		c.dst = make(map[string]string, len(c.src)+2)
		for k, v := range c.src {
			c.dst[k] = v
		}
	}
	c.dst[key] = value
}

func (c *carrier) Keys() []string {
	m := c.src
	if c.dst != nil {
		m = c.dst
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
