//go:build e2e

package handover

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/router"
)

// owner is where a key goes: a cluster and a partition there.
type owner struct {
	cluster   string
	partition int
}

// placement places keys by SPEC.md over clusters of equal weight, each
// with parts partitions.
type placement struct {
	r     *router.Router
	parts int
}

func newPlacement(names []string, parts int) placement {
	ms := make([]router.Member, len(names))
	for i, n := range names {
		ms[i] = router.Member{Name: n, Weight: 1}
	}
	r, err := router.New(ms)
	Expect(err).NotTo(HaveOccurred())
	return placement{r: r, parts: parts}
}

func (pl placement) owner(key string) owner {
	h := router.Hash(key)
	return owner{pl.r.Name(pl.r.Cluster(h)), router.Partition(h, pl.parts)}
}

// specProducer is one producer instance written by HANDOVER.md section 5
// on plain pulsar-client-go producers, one per partition per cluster. It
// applies one change: from the placement it was made with to another.
type specProducer struct {
	id      uint64
	name    string // in the payloads
	ledger  *ordercheck.Ledger
	writers map[owner]pulsar.Producer

	mu      sync.Mutex
	epoch   uint64
	place   placement
	origins map[owner]router.Origin // old owner partition -> its marker's origin
	from    map[string]owner        // moved key -> its old owner
	tagged  map[string]bool         // moved key: a tagged message acknowledged
	written map[string]int          // per cluster
	failed  []error
}

// newSpecProducer opens a writer on every partition of topic on every
// cluster.
func newSpecProducer(ctx context.Context, id uint64, clients map[string]pulsar.Client, topic string, parts int,
	place placement, ledger *ordercheck.Ledger) *specProducer {
	sp := &specProducer{
		id: id, name: "sp" + strconv.FormatUint(id, 16), ledger: ledger, writers: map[owner]pulsar.Producer{},
		place: place, origins: map[owner]router.Origin{}, from: map[string]owner{},
		tagged: map[string]bool{}, written: map[string]int{},
	}
	for name, cl := range clients {
		for p := range parts {
			w, err := cl.CreateProducer(pulsar.ProducerOptions{
				Topic:                   fmt.Sprintf("%s-partition-%d", topic, p),
				BatchingMaxPublishDelay: 5 * time.Millisecond,
				SendTimeout:             time.Minute,
			})
			Expect(err).NotTo(HaveOccurred(), "%s partition %d", name, p)
			sp.writers[owner{name, p}] = w
		}
	}
	return sp
}

func (sp *specProducer) close() {
	for _, w := range sp.writers {
		w.Close()
	}
}

// send writes the next message of key: to its owner under the current
// placement, tagged as section 5.3 says while the key owes its origin.
func (sp *specProducer) send(ctx context.Context, key string) {
	sp.mu.Lock()
	o := sp.place.owner(key)
	props := map[string]string{}
	if old, moved := sp.from[key]; moved && !sp.tagged[key] {
		router.Tag{Producer: sp.id, Epoch: sp.epoch, From: []router.Origin{sp.origins[old]}}.AddTo(props)
	}
	sp.written[o.cluster]++
	sp.mu.Unlock()
	rec, payload := sp.ledger.Next(sp.name, key)
	tagged := len(props) > 0
	sp.writers[o].SendAsync(ctx, &pulsar.ProducerMessage{Key: key, Payload: payload, Properties: props},
		func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			sp.ledger.Done(rec, time.Now(), err)
			sp.mu.Lock()
			defer sp.mu.Unlock()
			if err != nil {
				sp.failed = append(sp.failed, fmt.Errorf("%s: %w", key, err))
			} else if tagged {
				sp.tagged[key] = true
			}
		})
}

// flush waits for every message handed over to have its outcome.
func (sp *specProducer) flush() {
	for o, w := range sp.writers {
		Expect(w.Flush()).To(Succeed(), "%v", o)
	}
}

// change applies section 5.2 for a change to next: a marker on every old
// owner partition that a key of keys leaves, behind everything handed to
// it (flush: every earlier message has its outcome); once each marker is
// acknowledged, later messages of the moved keys go to their new owner
// tagged with the marker's position. It returns the moved keys.
func (sp *specProducer) change(ctx context.Context, keys []string, next placement) map[string]bool {
	sp.flush()
	sp.mu.Lock()
	moved := map[string]bool{}
	leaving := map[owner]uint64{} // old owner partition -> slots (keys) leaving
	for _, k := range keys {
		if before, after := sp.place.owner(k), next.owner(k); before != after {
			moved[k] = true
			sp.from[k] = before
			leaving[before]++
		}
	}
	sp.epoch++
	epoch := sp.epoch
	sp.mu.Unlock()
	for o, n := range leaving {
		m := router.Marker{Producer: sp.id, Epoch: epoch, Moved: n}
		id, err := sp.writers[o].Send(ctx, &pulsar.ProducerMessage{Payload: []byte{}, Properties: m.Properties()})
		Expect(err).NotTo(HaveOccurred(), "marker on %v", o)
		sp.mu.Lock()
		sp.origins[o] = router.Origin{Cluster: o.cluster, Partition: int32(o.partition),
			Pos: router.Position{Ledger: id.LedgerID(), Entry: id.EntryID(), Batch: id.BatchIdx()}}
		sp.mu.Unlock()
	}
	sp.mu.Lock()
	sp.place = next
	sp.mu.Unlock()
	return moved
}

// clientsOf returns a quiet pulsar-client-go client per cluster, closed
// when the spec ends.
func clientsOf(clusters []*testbed.Cluster) map[string]pulsar.Client {
	out := map[string]pulsar.Client{}
	for _, c := range clusters {
		cl, err := bedsuite.Client(c.ServiceURL, false)
		Expect(err).NotTo(HaveOccurred(), c.Name)
		out[c.Name] = cl
	}
	return out
}
