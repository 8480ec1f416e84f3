package producer

import "github.com/keyroute/keyroute/producer/internal/hook"

// FakeConnect returns the connect of the fake behind o, an Opt from
// producertest's Clusters.Opt, for the tests that drive the fake's
// writers without a Producer.
func FakeConnect(o Opt) hook.Connect { return o.(hookOpt).fn }

// Held reports the buffer held by each cluster, in topology order.
func (p *Producer) Held() (msgs, bytes []int64) {
	for _, c := range p.clusters {
		m, b := c.budget.held()
		msgs = append(msgs, m)
		bytes = append(bytes, b)
	}
	return msgs, bytes
}
