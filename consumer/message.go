package consumer

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// ID identifies a message across the clusters of a topology: the cluster
// it was read from, its partition there, and its Pulsar message ID. IDs
// can be kept and acknowledged later with AckID. The Consumer reads each
// partition with a pulsar-client-go consumer of its own, which numbers
// its one partition 0: Pulsar.PartitionIdx() is then 0, and Partition
// names the partition.
type ID struct {
	// Topic is the topic it was read from, as the Topics option names
	// it, when the Consumer reads several; "" when it reads one.
	Topic     string
	Cluster   string
	Partition int
	Pulsar    pulsar.MessageID
}

// String returns "cluster/partition/ledger:entry:batch", preceded by the
// topic and a space when Topic is set (Pulsar topic names and cluster
// names hold no space).
func (id ID) String() string {
	t := ""
	if id.Topic != "" {
		t = id.Topic + " "
	}
	if id.Pulsar == nil {
		return t + id.Cluster + "/-"
	}
	return fmt.Sprintf("%s%s/%d/%d:%d:%d", t, id.Cluster, id.Partition,
		id.Pulsar.LedgerID(), id.Pulsar.EntryID(), id.Pulsar.BatchIdx())
}

// Message is one message read from one of the clusters.
type Message struct {
	Key string
	// OrderingKey is the producer's ordering key, "" when it set none.
	OrderingKey string
	Value       []byte
	// NullValue is true for a Pulsar null value (a tombstone), which has
	// no Value; an empty payload is not a null value.
	NullValue  bool
	Properties map[string]string
	// EventTime is the time the producer set, zero when it set none.
	EventTime time.Time
	// PublishTime is when the producing client published it.
	PublishTime time.Time
	// RedeliveryCount is how many times the broker has delivered it
	// before (it counts nacks and, on Shared and KeyShared subscriptions,
	// redeliveries after a consumer left).
	RedeliveryCount uint32
	ID              ID

	raw pulsar.Message
	k   *cluster // the cluster it was read from; nil for a Message made elsewhere
}

// Raw is the pulsar-client-go message, for fields keyroute does not copy.
func (m *Message) Raw() pulsar.Message { return m.raw }

// fill sets m from raw, read from part p. It writes field by field:
// m is on the heap, and a composite literal would be built aside and
// copied over with a bulk write barrier.
func (m *Message) fill(raw pulsar.Message, p *part) {
	mid, k := raw.ID(), p.k
	pi := p.idx
	if pi < 0 {
		pi = mid.PartitionIdx()
	}
	m.Key = raw.Key()
	m.OrderingKey = raw.OrderingKey()
	m.Value = raw.Payload()
	m.NullValue = raw.IsNullValue()
	m.Properties = raw.Properties()
	m.EventTime = raw.EventTime()
	m.PublishTime = raw.PublishTime()
	m.RedeliveryCount = raw.RedeliveryCount()
	m.ID = ID{Topic: k.owner.cfg.idTopic, Cluster: k.name, Partition: int(pi), Pulsar: mid}
	m.raw = raw
	m.k = k
}

// slabSize is how many Messages Receive carves from one allocation.
const slabSize = 32

// slab is one allocation of Messages that Receive hands out one by one.
type slab struct {
	ms   [slabSize]Message
	next atomic.Int32 // the next free index
}

// carve returns a zero Message that no one else holds, from the current
// slab or a new one.
func (c *Consumer) carve() *Message {
	for {
		s := c.slab.Load()
		if s != nil {
			if i := s.next.Add(1) - 1; i < slabSize {
				return &s.ms[i]
			}
		}
		c.slab.CompareAndSwap(s, new(slab))
	}
}
