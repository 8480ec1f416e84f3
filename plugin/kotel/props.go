package kotel

import "github.com/keyroute/keyroute/producer"

// messageProps returns the message's own properties (read only).
func messageProps(ev *producer.Event) map[string]string { return ev.Properties }
