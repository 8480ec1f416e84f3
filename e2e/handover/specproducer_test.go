//go:build e2e

package handover

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/e2e/internal/standalone"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/router"
)

// owner is where a key goes: a cluster and a partition there.
type owner struct {
	cluster   string
	partition int
}

// placement places keys by SPEC.md over clusters of equal weight, with
// parts[name] partitions each.
type placement struct {
	r     *router.Router
	parts map[string]int
}

func newPlacement(parts map[string]int) placement {
	var ms []router.Member
	for n := range parts {
		ms = append(ms, router.Member{Name: n, Weight: 1})
	}
	r, err := router.New(ms)
	Expect(err).NotTo(HaveOccurred())
	return placement{r: r, parts: parts}
}

// evenly returns n partitions for each of names.
func evenly(n int, names ...string) map[string]int {
	out := map[string]int{}
	for _, name := range names {
		out[name] = n
	}
	return out
}

func (pl placement) owner(key string) owner {
	h := router.Hash(key)
	c := pl.r.Name(pl.r.Cluster(h))
	return owner{c, router.Partition(h, pl.parts[c])}
}

// specProducer is one producer instance written by HANDOVER.md section 5
// on plain pulsar-client-go producers, one per partition per cluster. It
// applies one change: from the placement it was made with to another.
type specProducer struct {
	id      uint64
	name    string // in the payloads
	ledger  *ordercheck.Ledger
	clients map[string]pulsar.Client
	topic   string

	mu      sync.Mutex
	writers map[owner]pulsar.Producer // opened on first use
	epoch   uint64
	place   placement
	origins map[owner]router.Origin // old owner partition -> its marker's origin
	from    map[string]owner        // moved key -> its old owner
	tagged  map[string]bool         // moved key: a tagged message acknowledged
	written map[string]int          // per cluster
	failed  []error
}

// newSpecProducer returns a producer instance of topic that places keys
// by place until its change, with a writer open on every partition there.
func newSpecProducer(ctx context.Context, id uint64, clients map[string]pulsar.Client, topic string, place placement,
	ledger *ordercheck.Ledger) *specProducer {
	sp := &specProducer{
		id: id, name: "sp" + strconv.FormatUint(id, 16), ledger: ledger, clients: clients, topic: topic,
		writers: map[owner]pulsar.Producer{}, place: place, origins: map[owner]router.Origin{},
		from: map[string]owner{}, tagged: map[string]bool{}, written: map[string]int{},
	}
	DeferCleanup(sp.close)
	sp.open(ctx, place)
	return sp
}

// open opens a writer on every partition of pl that has none yet. A
// broker on a loaded machine may time a first request out: it retries
// while ctx lasts (standalone.RetryWhile's bound).
func (sp *specProducer) open(ctx context.Context, pl placement) {
	for c, n := range pl.parts {
		for p := range n {
			o := owner{c, p}
			sp.mu.Lock()
			have := sp.writers[o] != nil
			sp.mu.Unlock()
			if have {
				continue
			}
			var w pulsar.Producer
			err := standalone.RetryWhile(ctx, func() (err error) {
				w, err = sp.clients[c].CreateProducer(pulsar.ProducerOptions{
					Topic:                   fmt.Sprintf("%s-partition-%d", sp.topic, p),
					BatchingMaxPublishDelay: 5 * time.Millisecond,
					SendTimeout:             time.Minute,
				})
				return err
			}, func(error) bool { return true })
			Expect(err).NotTo(HaveOccurred(), "%s partition %d", c, p)
			sp.mu.Lock()
			sp.writers[o] = w
			sp.mu.Unlock()
		}
	}
}

func (sp *specProducer) close() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
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
	w := sp.writers[o]
	sp.mu.Unlock()
	rec, payload := sp.ledger.Next(sp.name, key)
	tagged := len(props) > 0
	w.SendAsync(ctx, &pulsar.ProducerMessage{Key: key, Payload: payload, Properties: props},
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
	sp.mu.Lock()
	ws := maps.Clone(sp.writers)
	sp.mu.Unlock()
	for o, w := range ws {
		Expect(w.Flush()).To(Succeed(), "%v", o)
	}
}

// change applies section 5.2 for a change to next: a marker on every old
// owner partition that a key of keys leaves, behind everything handed to
// it (flush: every earlier message has its outcome); once each marker is
// acknowledged, later messages of the moved keys go to their new owner
// tagged with the marker's position. It returns the moved keys.
func (sp *specProducer) change(ctx context.Context, keys []string, next placement) map[string]bool {
	sp.open(ctx, next)
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
		sp.mu.Lock()
		w := sp.writers[o]
		sp.mu.Unlock()
		id, err := w.Send(ctx, &pulsar.ProducerMessage{Payload: []byte{}, Properties: m.Properties()})
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
