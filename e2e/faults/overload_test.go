//go:build e2e

package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/standalone"
	"github.com/keyroute/keyroute/producer"
)

// rss returns this process's resident set size in bytes.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			Expect(err).NotTo(HaveOccurred())
			return kb << 10
		}
	}
	Fail("no VmRSS")
	return 0
}

// outcomes collects the callbacks of SendAsync by message key. Callbacks
// run on the clusters' callback goroutines, in hand-over order per key: a
// message refused before hand-over is reported after the earlier messages
// of its partition, so on a hung cluster only once it is back.
type outcomes struct {
	mu    sync.Mutex
	err   map[string]error
	twice []string // keys reported more than once
}

func newOutcomes() *outcomes { return &outcomes{err: map[string]error{}} }

func (o *outcomes) record(_ producer.ID, m *producer.Message, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.err[m.Key]; ok {
		o.twice = append(o.twice, m.Key)
	}
	o.err[m.Key] = err
}

// of returns key's outcome, and whether it has one; the spec fails if any
// message had two.
func (o *outcomes) of(key string) (error, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	Expect(o.twice).To(BeEmpty(), "one outcome per message")
	err, ok := o.err[key]
	return err, ok
}

// overloadSpec runs first in the suite's container, before any cluster has
// been killed: see the note on restarts in faults_test.go.
//
// Whether a send waits is told apart by one bound measured in the spec: W,
// ten times the slowest hand-over that found space. A send beyond the share
// must take at least W when its ctx allows W (it waited for its ctx), and
// a send refused with BlockWhenFull(false) must take less than W (it did
// not wait). Which sends find space is read from Health: a message is
// accepted while its cost fits in what the cluster's share has left.
func overloadSpec() {
	It("overload: a hung cluster fills only its own share of the memory limit; blocks (or fails, per BlockWhenFull) at the share, keeps RSS bounded, honours ctx, and delivers it all once the cluster is back", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 5*time.Minute)
		defer cancel()
		const limit = 40 << 20 // 8 MiB per cluster
		const size = 64 << 10
		victim := bed.Clusters()[3]
		topic := newTopic(ctx, "overload")
		open := func(block bool) *producer.Producer {
			var p *producer.Producer
			err := standalone.Retry(ctx, func() (err error) {
				p, err = producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.MemoryLimit(limit),
					producer.MaxPendingMessages(1_000_000), producer.DownAfter(time.Hour), producer.BlockWhenFull(block))
				return err
			})
			Expect(err).NotTo(HaveOccurred())
			return p
		}
		p := open(true)
		q := open(false) // New needs every cluster: open both before the hang
		var keys []string
		for i := 0; len(keys) < 400; i++ {
			if c, _ := p.Placement(fmt.Sprint("big-", i)); c == victim.Name {
				keys = append(keys, fmt.Sprint("big-", i))
			}
		}
		payload := make([]byte, size)
		msg := func(k string) *producer.Message { return &producer.Message{Key: k, Value: payload} }
		cost := func(k string) int64 { return int64(len(k) + size) }
		share := int64(limit / len(bed.Clusters()))
		pOut, qOut := newOutcomes(), newOutcomes()
		runtime.GC()
		before := rss()
		Expect(victim.Pause()).To(Succeed())
		resumed := false
		defer func() {
			if !resumed {
				_ = victim.Resume()
			}
		}()

		// Fill the share: every message that fits is accepted (it holds
		// its budget) without waiting.
		var accepted []string
		var slowest time.Duration
		next := 0
		for ; next < len(keys); next++ {
			h := health(p, victim.Name)
			if h.PendingBytes+cost(keys[next]) > share {
				break
			}
			start := time.Now()
			p.SendAsync(ctx, msg(keys[next]), pOut.record)
			slowest = max(slowest, time.Since(start))
			Expect(health(p, victim.Name).PendingMessages).To(Equal(h.PendingMessages+1), "a message that fits in the share is accepted")
			accepted = append(accepted, keys[next])
		}
		Expect(next+3).To(BeNumerically("<=", len(keys)), "400 messages of 64 KiB overflow the share")
		w := 10 * slowest

		// Beyond the share a send waits until its ctx ends, and is then
		// refused, holding nothing.
		var blocked []string
		for _, k := range keys[next : next+3] {
			h := health(p, victim.Name)
			bctx, bcancel := context.WithTimeout(ctx, w)
			start := time.Now()
			p.SendAsync(bctx, msg(k), pOut.record)
			took := time.Since(start)
			bcancel()
			Expect(took).To(BeNumerically(">=", w), "a send beyond the share waits for its ctx")
			Expect(health(p, victim.Name).PendingMessages).To(Equal(h.PendingMessages), "a send refused at the share holds nothing")
			blocked = append(blocked, k)
		}
		h := health(p, victim.Name)
		runtime.GC()
		grown := rss() - before
		GinkgoWriter.Printf("accepted %d x %d KiB for the hung cluster before blocking (share %d MiB); held %d B; slowest accepted hand-over %s, so W = %s; RSS grew %.1f MiB\n",
			len(accepted), size>>10, share>>20, h.PendingBytes, slowest, w, float64(grown)/(1<<20))
		Expect(h.PendingBytes).To(BeNumerically("<=", share))
		Expect(int64(len(accepted)) * size).To(BeNumerically(">=", share-size))
		Expect(grown).To(BeNumerically("<", 3*share+16<<20), "RSS stays within a small multiple of the share")

		// Other clusters are not held up by the hung one's full share.
		for i := 0; i < 50; i++ {
			k := fmt.Sprint("small-", i)
			if c, _ := p.Placement(k); c == victim.Name {
				continue
			}
			_, err := p.Send(ctx, &producer.Message{Key: k, Value: []byte("x")})
			Expect(err).NotTo(HaveOccurred())
		}

		// With BlockWhenFull(false) the same situation fails at once.
		var qAccepted []string
		full := ""
		for _, k := range keys {
			h := health(q, victim.Name)
			if h.PendingBytes+cost(k) <= share {
				q.SendAsync(ctx, msg(k), qOut.record)
				qAccepted = append(qAccepted, k)
				continue
			}
			fctx, fcancel := context.WithTimeout(ctx, w)
			start := time.Now()
			q.SendAsync(fctx, msg(k), qOut.record)
			took := time.Since(start)
			fcancel()
			GinkgoWriter.Printf("BlockWhenFull(false): refused in %s after %d accepted\n", took, len(qAccepted))
			Expect(took).To(BeNumerically("<", w), "a send refused at the share does not wait")
			Expect(health(q, victim.Name).PendingMessages).To(Equal(h.PendingMessages))
			full = k
			break
		}
		Expect(full).NotTo(BeEmpty(), "the share fills")

		Expect(victim.Resume()).To(Succeed())
		resumed = true
		Expect(p.Flush(ctx)).To(Succeed())
		Expect(q.Flush(ctx)).To(Succeed())
		Expect(q.Close(ctx)).To(Succeed())
		Expect(p.Close(ctx)).To(Succeed())
		for _, k := range accepted {
			err, ok := pOut.of(k)
			Expect(ok).To(BeTrue(), k)
			Expect(err).NotTo(HaveOccurred(), "every accepted message is acknowledged once the cluster is back")
		}
		for _, k := range qAccepted {
			err, ok := qOut.of(k)
			Expect(ok).To(BeTrue(), k)
			Expect(err).NotTo(HaveOccurred(), "every accepted message is acknowledged once the cluster is back")
		}
		for _, k := range blocked {
			err, ok := pOut.of(k)
			Expect(ok).To(BeTrue(), k)
			Expect(err).To(MatchError(context.DeadlineExceeded))
			Expect(producer.NotWritten(err)).To(BeTrue(), "%v", err)
			Expect(producer.Reason(err)).To(Equal(producer.ReasonDeadlineExceeded))
			se, ok := errors.AsType[*producer.SendError](err)
			Expect(ok).To(BeTrue())
			Expect(se.Cluster).To(Equal(victim.Name))
		}
		err, ok := qOut.of(full)
		Expect(ok).To(BeTrue())
		Expect(err).To(MatchError(producer.ErrBufferFull))
		Expect(producer.NotWritten(err)).To(BeTrue(), "%v", err)
		Expect(producer.Reason(err)).To(Equal(producer.ReasonBufferFull))
	})
}
