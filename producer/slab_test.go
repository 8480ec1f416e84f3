package producer

import (
	"context"
	"testing"
	"time"
)

// TestSlabsReadyTheirInflights checks what appendSlab makes once per
// inflight: its own onAck, and with an observed cluster its own Event.
func TestSlabsReadyTheirInflights(t *testing.T) {
	for _, observed := range []bool{false, true} {
		fs := appendSlab([]*inflight{nil}, minSlab, observed)
		if len(fs) != 1+minSlab || fs[0] != nil {
			t.Fatalf("appendSlab(%d) appended %d inflights", minSlab, len(fs)-1)
		}
		events := map[*Event]bool{}
		for i, f := range fs[1:] {
			switch {
			case f.onAck == nil:
				t.Fatalf("inflight %d has no onAck", i)
			case observed && (f.own == nil || events[f.own]):
				t.Fatalf("an observed slab's inflight %d has no Event of its own", i)
			case !observed && f.own != nil:
				t.Fatalf("an unobserved slab's inflight %d has an Event", i)
			}
			events[f.own] = true
			if got := eventFor(f); observed && got != f.own {
				t.Fatalf("eventFor(inflight %d) is not its own Event", i)
			}
		}
	}
}

// TestOnAckSettlesItsOwnInflight: pulsar-client-go calls a message's
// callback with the message; onAck settles the inflight it was made with.
func TestOnAckSettlesItsOwnInflight(t *testing.T) {
	c := &cluster{name: "c", budget: newBudget(10, 1000), health: newHealth(time.Now())}
	pt := &partition{c: c}
	c.parts = []*partition{pt}
	fs := appendSlab(nil, 2, false)
	a, b := fs[0], fs[1]
	for _, f := range fs {
		f.part = pt
		f.ctx = context.Background()
		f.msg = &Message{Key: "k"}
		f.accepted = true
	}
	b.onAck(nil, &b.pm, nil) // no number: reported at once (see holdLooseLocked)
	if a.state.Load() != pending {
		t.Fatal("b's onAck settled a")
	}
	if b.state.Load() != completed {
		t.Fatalf("b's onAck left it in state %d", b.state.Load())
	}
}
