package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/keyroute/keyroute/internal/testbed"
)

// interrupts turns the first SIGINT/SIGTERM into a cancelled ctx (the run
// stops, prints what it has and stops its clusters) and the second into an
// immediate exit that still kills the JVMs loadgen started.
type interrupts struct {
	ctx    context.Context
	cancel context.CancelFunc
	w      io.Writer
	ch     chan os.Signal
	done   chan struct{}
	wg     sync.WaitGroup
	got    atomic.Bool
	bed    atomic.Pointer[testbed.Bed]
}

func newInterrupts(w io.Writer) *interrupts {
	ctx, cancel := context.WithCancel(context.Background())
	in := &interrupts{ctx: ctx, cancel: cancel, w: w, ch: make(chan os.Signal, 2), done: make(chan struct{})}
	signal.Notify(in.ch, os.Interrupt, syscall.SIGTERM)
	in.wg.Add(1)
	go in.loop()
	return in
}

func (in *interrupts) loop() {
	defer in.wg.Done()
	n := 0
	for {
		select {
		case <-in.done:
			return
		case sig := <-in.ch:
			n++
			if n == 1 {
				in.got.Store(true)
				fmt.Fprintf(in.w, "\nloadgen: %v: stopping, printing the results so far (again to exit at once)\n", sig)
				in.cancel()
				continue
			}
			fmt.Fprintf(in.w, "\nloadgen: %v again: exiting now\n", sig)
			if b := in.bed.Load(); b != nil {
				var wg sync.WaitGroup
				for _, c := range b.Clusters() {
					wg.Add(1)
					go func() { defer wg.Done(); _ = c.Kill() }()
				}
				wg.Wait()
			}
			os.Exit(exitInterrupted)
		}
	}
}

// adoptBed takes signal handling over from the test bed, whose own handler
// kills every JVM and exits at once: from now on the first signal lets the
// run finish and stop the bed cleanly. The JVMs still die with this process
// (parent-death signal) whatever happens.
func (in *interrupts) adoptBed(b *testbed.Bed) {
	in.bed.Store(b)
	signal.Reset(os.Interrupt, syscall.SIGTERM)
	signal.Notify(in.ch, os.Interrupt, syscall.SIGTERM)
}

// interrupted reports whether a signal arrived.
func (in *interrupts) interrupted() bool { return in.got.Load() }

// stop restores default signal handling.
func (in *interrupts) stop() {
	signal.Stop(in.ch)
	close(in.done)
	in.wg.Wait()
	in.cancel()
}
