package producer

import (
	"context"
	"testing"
)

// The budget packs messages and bytes in one word: the largest limits the
// options accept must neither overflow the byte count into the message
// count nor wrap the message count.
func TestBudgetAtTheLargestLimits(t *testing.T) {
	b := newBudget(MaxPendingLimit, MemoryLimitMax)
	never := func() bool { return false }
	ctx := context.Background()

	// A message as large as the whole byte limit, alone.
	if err := b.acquire(ctx, MemoryLimitMax, nil, false, never); err != nil {
		t.Fatalf("a message of MemoryLimitMax bytes alone: %v", err)
	}
	if m, n := b.held(); m != 1 || n != MemoryLimitMax {
		t.Fatalf("held %d messages, %d bytes; want 1, %d", m, n, int64(MemoryLimitMax))
	}
	if err := b.acquire(ctx, 1, nil, false, never); err != ErrBufferFull {
		t.Fatalf("one byte more: %v, want ErrBufferFull", err)
	}
	b.release(1, MemoryLimitMax)

	// Every message slot, as the count reaches MaxPendingLimit.
	b.state.Store(uint64(MaxPendingLimit-1) << budgetShift)
	if err := b.acquire(ctx, 0, nil, false, never); err != nil {
		t.Fatalf("the last message slot: %v", err)
	}
	if err := b.acquire(ctx, 0, nil, false, never); err != ErrBufferFull {
		t.Fatalf("past MaxPendingLimit messages: %v, want ErrBufferFull", err)
	}
	if m, n := b.held(); m != MaxPendingLimit || n != 0 {
		t.Fatalf("held %d messages, %d bytes; want %d, 0", m, n, MaxPendingLimit)
	}
	b.release(MaxPendingLimit, 0)
	if m, n := b.held(); m != 0 || n != 0 {
		t.Fatalf("after release: %d messages, %d bytes held", m, n)
	}
}

// A sender waiting for space is woken by a release, however the release
// and its look at the budget interleave.
func TestBudgetWaiterIsWokenByRelease(t *testing.T) {
	b := newBudget(1, 100)
	never := func() bool { return false }
	ctx := context.Background()
	for range 1000 {
		if err := b.acquire(ctx, 10, nil, true, never); err != nil {
			t.Fatal(err)
		}
		got := make(chan error)
		go func() { got <- b.acquire(ctx, 10, nil, true, never) }()
		b.release(1, 10)
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		b.release(1, 10)
	}
}
