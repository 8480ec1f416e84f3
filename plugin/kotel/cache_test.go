package kotel

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

// TestCacheDestinations: every (topic, cluster, service URL, partition,
// op) gets its own destination, the same one every time, whether get
// finds it in a group or, past maxGroups groups or maxParts partitions,
// in the map.
func TestCacheDestinations(t *testing.T) {
	c := &cache{}
	type key struct {
		topic, cluster, url string
		partition           int
		op                  producer.Op
	}
	seen := map[key]*dest{}
	events := func(yield func(*producer.Event) bool) {
		for i := range maxGroups + 4 {
			for _, cl := range []string{"east", "west"} {
				for _, part := range []int{0, 3, maxParts + 1} {
					for _, op := range []producer.Op{producer.OpSend, producer.OpSendAsync, producer.OpSendTxn, producer.Op(7)} {
						ev := &producer.Event{Topic: fmt.Sprintf("t%d", i/2), Cluster: cl, ServiceURL: fmt.Sprintf("pulsar://%s-%d:6650", cl, i%2), Partition: part, Op: op}
						if !yield(ev) {
							return
						}
					}
				}
			}
		}
	}
	for round := range 2 {
		for ev := range events {
			d := c.get(ev)
			k := key{ev.Topic, ev.Cluster, ev.ServiceURL, ev.Partition, ev.Op}
			require.Equal(t, destKey{topic: k.topic, cluster: k.cluster, url: k.url, partition: k.partition, op: k.op}, d.key)
			if round == 0 {
				assert.NotContains(t, seen, k)
				seen[k] = d
			} else {
				assert.Same(t, seen[k], d, "%+v", k)
			}
		}
	}
	assert.Len(t, *c.groups.Load(), maxGroups)
}
