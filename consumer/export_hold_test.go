package consumer

import (
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/router"
)

// SetHoldClock makes c's hand-over read the time from now (holds' ages).
func SetHoldClock(c *Consumer, now func() time.Time) {
	c.hold.mu.Lock()
	defer c.hold.mu.Unlock()
	c.hold.now = now
}

// HoldTick runs the monitor's check of the holds' ages once.
func HoldTick(c *Consumer) { c.hold.tick() }

// Pack and Unpack are the frontier word's encoding.
var (
	Pack   = pack
	Unpack = unpack
)

// benchMsg is the least a message needs for admit.
type benchMsg struct {
	pulsar.Message
	id    benchID
	props map[string]string
}

type benchID struct {
	pulsar.MessageID
	entry int64
	part  int32
}

func (b *benchID) LedgerID() int64                { return 1 }
func (b *benchID) EntryID() int64                 { return b.entry }
func (b *benchID) BatchIdx() int32                { return -1 }
func (b *benchID) PartitionIdx() int32            { return b.part }
func (m *benchMsg) ID() pulsar.MessageID          { return &m.id }
func (m *benchMsg) Properties() map[string]string { return m.props }
func (m *benchMsg) Key() string                   { return "k" }

// BenchmarkAdmit measures the hand-over's check on the steady path alone:
// a message without hand-over properties, nothing held, each at a new
// position (so each stores its partition's frontier).
func BenchmarkAdmit(b *testing.B) {
	for _, bc := range []struct {
		name    string
		props   map[string]string
		holding bool
	}{{"noprops", nil, false}, {"props", map[string]string{"trace": "abc", "tenant": "t1"}, false}, {"noprops/holding", nil, true}} {
		props, holding := bc.props, bc.holding
		b.Run(bc.name, func(b *testing.B) {
			c := &Consumer{cfg: defaultCfg()}
			k := &cluster{member: &member{name: "c1"}, owner: c}
			c.set.Store(&clusterSet{read: []*cluster{k}, byName: map[string]*cluster{"c1": k}, changed: make(chan struct{})})
			c.hold.init(c)
			p := &part{k: k, idx: -1}
			m := &benchMsg{props: props}
			c.admit(m, p) // the first makes the frontier table
			if holding {
				held := &benchMsg{id: benchID{part: 1, entry: 1}, props: map[string]string{}}
				router.Tag{Producer: 1, Epoch: 1, From: []router.Origin{{Cluster: "c1", Partition: 2, Pos: router.Position{Ledger: 1, Entry: 9}}}}.AddTo(held.props)
				if c.admit(held, p) {
					b.Fatal("not held")
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				m.id.entry = int64(i + 1)
				if !c.admit(m, p) {
					b.Fatal("held")
				}
			}
		})
	}
}

// ForgetCluster runs what a live topology change that stops reading
// cluster name does to the holds.
func ForgetCluster(c *Consumer, name string, finished bool) {
	k := c.set.Load().byName[name]
	c.setMu.Lock()
	k.cur.Store(nil)
	c.publish(slices.DeleteFunc(slices.Clone(c.set.Load().members), func(m *member) bool { return m == k.member }))
	c.setMu.Unlock()
	how := forgetClosed
	if finished {
		how = forgetFinished
	}
	c.hold.forget(k, how)
}
