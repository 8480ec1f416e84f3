package kotel

import (
	"strconv"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// siteKey names where a consumed message came from: a partition of the
// topic on one cluster.
type siteKey struct {
	cluster   string
	partition int
}

// site holds a ConsumerObserver's attributes and counters for one
// siteKey, built once so that a message or a settlement only looks them
// up. Its fields are immutable after newSite, except failed.
type site struct {
	recvAttrs []attribute.KeyValue // the receive span's and consumed counter's
	consumed  *counter             // messages received
	acked     *counter             // acknowledgements that succeeded
	nacked    *counter             // negative acknowledgements
	ackAttrs  []attribute.KeyValue // an acknowledgement's, for its failures

	s      *sites
	failed sync.Map // error.type string -> *counter; bounded by the error types seen
}

// sites maps siteKeys to their sites. Reads of m are lock free: the map
// behind m is never modified once stored; writers copy it under mu. It
// grows with the partitions seen (clusters x partitions) and never
// shrinks.
type sites struct {
	mu sync.Mutex // serializes writers of m
	m  atomic.Pointer[map[siteKey]*site]

	topic, subscription string
	urls                map[string]string // cluster -> service URL; read only

	// consumed and settled hold the counters of the two instruments, by
	// attribute set (only their counter registries are used).
	consumed, settled cache
}

func (s *sites) get(cluster string, partition int) *site {
	k := siteKey{cluster: cluster, partition: partition}
	if m := s.m.Load(); m != nil {
		if st := (*m)[k]; st != nil {
			return st
		}
	}
	return s.add(k)
}

func (s *sites) add(k siteKey) *site {
	s.mu.Lock()
	defer s.mu.Unlock()
	var old map[siteKey]*site
	if m := s.m.Load(); m != nil {
		old = *m
		if st := old[k]; st != nil {
			return st
		}
	}
	next := make(map[siteKey]*site, len(old)+1)
	for k, st := range old {
		next[k] = st
	}
	st := s.newSite(k)
	next[k] = st
	s.m.Store(&next)
	return st
}

func (s *sites) newSite(k siteKey) *site {
	where := s.where(k)
	attrs := func(op string, typ attribute.KeyValue) []attribute.KeyValue {
		a := make([]attribute.KeyValue, 0, 3+len(where))
		return append(append(a, semconv.MessagingSystemPulsar, semconv.MessagingOperationName(op), typ), where...)
	}
	recv := attrs("receive", semconv.MessagingOperationTypeReceive)
	ack := attrs("ack", semconv.MessagingOperationTypeSettle)
	return &site{
		recvAttrs: recv,
		consumed:  s.consumed.counter(attribute.NewSet(recv...)),
		acked:     s.settled.counter(attribute.NewSet(ack...)),
		nacked:    s.settled.counter(attribute.NewSet(attrs("nack", semconv.MessagingOperationTypeSettle)...)),
		ackAttrs:  ack,
		s:         s,
	}
}

// where returns the attributes that say where k's messages come from:
// the destination, the subscription, the partition, the broker and the
// cluster; those the options did not give are left out.
func (s *sites) where(k siteKey) []attribute.KeyValue {
	var a []attribute.KeyValue
	if s.topic != "" {
		a = append(a, semconv.MessagingDestinationName(s.topic))
	}
	if s.subscription != "" {
		a = append(a, semconv.MessagingConsumerGroupName(s.subscription))
	}
	a = append(a, semconv.MessagingDestinationPartitionID(strconv.Itoa(k.partition)))
	if url, ok := s.urls[k.cluster]; ok {
		host, port := serverAddr(url)
		a = append(a, semconv.ServerAddress(host), semconv.ServerPort(port))
	}
	return append(a, ClusterKey.String(k.cluster))
}

// ackFailed returns the counter of acknowledgements that failed with
// errType.
func (st *site) ackFailed(errType string) *counter {
	if ct, ok := st.failed.Load(errType); ok {
		return ct.(*counter)
	}
	all := make([]attribute.KeyValue, 0, len(st.ackAttrs)+1)
	all = append(append(all, st.ackAttrs...), semconv.ErrorTypeKey.String(errType))
	ct, _ := st.failed.LoadOrStore(errType, st.s.settled.counter(attribute.NewSet(all...)))
	return ct.(*counter)
}
