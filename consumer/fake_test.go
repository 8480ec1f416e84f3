package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/topology"
)

// fakeID is a pulsar.MessageID for fake messages.
type fakeID struct {
	pulsar.MessageID
	part  int32
	entry int64
}

func (f fakeID) LedgerID() int64     { return 1 }
func (f fakeID) EntryID() int64      { return f.entry }
func (f fakeID) BatchIdx() int32     { return -1 }
func (f fakeID) PartitionIdx() int32 { return f.part }

// fakeMsg is a pulsar.Message with the fields the Consumer copies.
type fakeMsg struct {
	pulsar.Message
	id          fakeID
	key         string
	value       []byte
	props       map[string]string
	publish     time.Time
	redelivered uint32
}

func (m *fakeMsg) ID() pulsar.MessageID          { return &m.id } // no allocation
func (m *fakeMsg) Key() string                   { return m.key }
func (m *fakeMsg) Payload() []byte               { return m.value }
func (m *fakeMsg) Properties() map[string]string { return m.props }
func (m *fakeMsg) EventTime() time.Time          { return time.Time{} }
func (m *fakeMsg) PublishTime() time.Time        { return m.publish }
func (m *fakeMsg) RedeliveryCount() uint32       { return m.redelivered }
func (m *fakeMsg) OrderingKey() string           { return "" }
func (m *fakeMsg) IsNullValue() bool             { return false }

// fakeStream is one cluster's subscription: messages are pushed into ch;
// acknowledgements are recorded.
type fakeStream struct {
	cluster string
	ch      chan pulsar.ConsumerMessage
	bed     *fakeBed

	mu     sync.Mutex
	next   map[int32]int64 // next entry per partition
	acks   []string        // "ack p:e", "cumul p:e", "nack p:e"
	seeks  []time.Time
	onSeek func() // called by SeekByTime after the queue is cleared
	closed bool
	ackErr error
	quiet  bool          // acks are not logged (for allocation tests)
	slow   chan struct{} // when set, Close waits until it is closed (a broker that does not answer)
	block  chan struct{} // when set, acks wait until it is closed (a broker that does not answer)
	waits  chan struct{} // with block: gets a value when an ack starts waiting
}

func newFakeStream(cluster string, queue int) *fakeStream {
	return &fakeStream{cluster: cluster, ch: make(chan pulsar.ConsumerMessage, queue), next: map[int32]int64{}}
}

// push queues a message for partition part, blocking while the queue is
// full.
func (s *fakeStream) push(part int32, key, value string) {
	cm := s.msg(part, key)
	cm.Message.(*fakeMsg).value = []byte(value)
	s.ch <- cm
}

func (s *fakeStream) Chan() <-chan pulsar.ConsumerMessage { return s.ch }

func (s *fakeStream) record(op string, id pulsar.MessageID) error {
	s.mu.Lock()
	if s.quiet {
		s.mu.Unlock()
		return nil
	}
	if s.closed {
		s.mu.Unlock()
		return errors.New("fake: consumer closed")
	}
	// Sent: logged before any wait for the broker's answer.
	s.acks = append(s.acks, fmt.Sprintf("%s %d:%d", op, id.PartitionIdx(), id.EntryID()))
	block, waits, ackErr := s.block, s.waits, s.ackErr
	s.mu.Unlock()
	if op == "nack" {
		return nil
	}
	if block != nil {
		waits <- struct{}{}
		<-block
	}
	return ackErr
}

func (s *fakeStream) Ack(m pulsar.Message) error                { return s.record("ack", m.ID()) }
func (s *fakeStream) AckID(id pulsar.MessageID) error           { return s.record("ack", id) }
func (s *fakeStream) AckCumulative(m pulsar.Message) error      { return s.record("cumul", m.ID()) }
func (s *fakeStream) AckIDCumulative(id pulsar.MessageID) error { return s.record("cumul", id) }
func (s *fakeStream) Nack(m pulsar.Message)                     { _ = s.record("nack", m.ID()) }
func (s *fakeStream) NackID(id pulsar.MessageID)                { _ = s.record("nack", id) }

// SeekByTime clears the queue, as pulsar-client-go does, then calls onSeek.
func (s *fakeStream) SeekByTime(t time.Time) error {
	for len(s.ch) > 0 {
		<-s.ch
	}
	s.mu.Lock()
	s.seeks = append(s.seeks, t)
	f := s.onSeek
	s.mu.Unlock()
	if f != nil {
		f()
	}
	return nil
}

func (s *fakeStream) Close() {
	s.mu.Lock()
	slow := s.slow
	s.mu.Unlock()
	if slow != nil {
		<-slow
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}

func (s *fakeStream) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.acks...)
}

// fakeBed is a set of fake clusters.
type fakeBed struct {
	mu      sync.Mutex
	queue   int
	shares  map[string]int // the MaxBuffered share each cluster was given
	streams map[string]*fakeStream
	failOn  map[string]error
	probes  map[string]error
	hang    chan struct{}  // when set, probes wait until it is closed
	parts   map[string]int // the topic's partition count per cluster; 1 when not set
	carry   bool           // a new stream of a cluster goes on from its old one's positions
	joins   map[string]int // subscriptions made per cluster
	gate    chan struct{}  // when set, subscribes wait until it is closed
}

func newFakeBed(queue int) *fakeBed {
	return &fakeBed{queue: queue, shares: map[string]int{}, streams: map[string]*fakeStream{}, failOn: map[string]error{}, probes: map[string]error{},
		parts: map[string]int{}, joins: map[string]int{}}
}

func (b *fakeBed) connect(_ context.Context, cl topology.Cluster, share int) (consumer.Stream, func() error, error) {
	b.mu.Lock()
	gate := b.gate
	b.mu.Unlock()
	if gate != nil {
		<-gate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shares[cl.Name] = share
	if err := b.failOn[cl.Name]; err != nil {
		return nil, nil, err
	}
	s := newFakeStream(cl.Name, b.queue)
	s.bed = b
	if old := b.streams[cl.Name]; old != nil && b.carry {
		old.mu.Lock()
		for p, e := range old.next {
			s.next[p] = e
		}
		old.mu.Unlock()
	}
	b.streams[cl.Name] = s
	b.joins[cl.Name]++
	name := cl.Name
	return s, func() error { return b.probe(name) }, nil
}

func (b *fakeBed) probe(cluster string) error {
	b.mu.Lock()
	hang := b.hang
	b.mu.Unlock()
	if hang != nil {
		<-hang
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.probes[cluster]
}

// Partitions is the topic's partition count on the stream's cluster now.
func (s *fakeStream) Partitions() (int, error) {
	if s.bed == nil {
		return 1, nil
	}
	s.bed.mu.Lock()
	defer s.bed.mu.Unlock()
	return max(1, s.bed.parts[s.cluster]), nil
}

func (b *fakeBed) setParts(cluster string, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.parts[cluster] = n
}

func (b *fakeBed) joined(cluster string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.joins[cluster]
}

func (b *fakeBed) setProbe(cluster string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probes[cluster] = err
}

func (b *fakeBed) stream(cluster string) *fakeStream {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.streams[cluster]
}

func topo(n int) *topology.Topology {
	t := &topology.Topology{}
	for i := 1; i <= n; i++ {
		t.Clusters = append(t.Clusters, topology.Cluster{
			Name:       fmt.Sprintf("c%d", i),
			ServiceURL: fmt.Sprintf("pulsar://127.0.0.1:%d", 6650+i),
			Weight:     1,
		})
	}
	return t
}

// msg makes a message for partition part without queueing it.
func (s *fakeStream) msg(part int32, key string) pulsar.ConsumerMessage {
	s.mu.Lock()
	e := s.next[part]
	s.next[part]++
	s.mu.Unlock()
	return pulsar.ConsumerMessage{Message: &fakeMsg{id: fakeID{part: part, entry: e}, key: key, publish: time.Now()}}
}
