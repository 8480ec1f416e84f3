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

// overloadSpec runs first in the suite's container, before any cluster has
// been killed: see the note on restarts in faults_test.go.
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
		runtime.GC()
		before := rss()
		Expect(victim.Pause()).To(Succeed())
		resumed := false
		defer func() {
			if !resumed {
				_ = victim.Resume()
			}
		}()

		var ok, blocked int
		outcomes := make(chan error, len(keys))
		for _, k := range keys {
			sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
			var early error
			p.SendAsync(sctx, &producer.Message{Key: k, Value: payload}, func(_ producer.ID, _ *producer.Message, err error) {
				if errors.Is(err, context.DeadlineExceeded) {
					early = err // the hand-over gave up: reported on this goroutine
					return
				}
				outcomes <- err
			})
			scancel()
			if early != nil {
				blocked++
				var se *producer.SendError
				Expect(errors.As(early, &se)).To(BeTrue())
				Expect(se.Cluster).To(Equal(victim.Name))
				if blocked == 3 {
					break
				}
				continue
			}
			ok++
		}
		share := int64(limit / len(bed.Clusters()))
		h := health(p, victim.Name)
		runtime.GC()
		grown := rss() - before
		GinkgoWriter.Printf("accepted %d x %d KiB for the hung cluster before blocking (share %d MiB); held %d B; RSS grew %.1f MiB\n",
			ok, size>>10, share>>20, h.PendingBytes, float64(grown)/(1<<20))
		Expect(blocked).To(Equal(3), "sends beyond the share block until their ctx ends")
		Expect(h.PendingBytes).To(BeNumerically("<=", share+size))
		Expect(int64(ok) * size).To(BeNumerically(">=", share-size))
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
		var full error
		for _, k := range keys {
			start := time.Now()
			q.SendAsync(ctx, &producer.Message{Key: k, Value: payload}, func(_ producer.ID, _ *producer.Message, err error) {
				if errors.Is(err, producer.ErrBufferFull) {
					full = err
				}
			})
			Expect(time.Since(start)).To(BeNumerically("<", time.Second))
			if full != nil {
				break
			}
		}
		Expect(full).To(MatchError(producer.ErrBufferFull))

		Expect(victim.Resume()).To(Succeed())
		resumed = true
		Expect(p.Flush(ctx)).To(Succeed())
		Expect(q.Close(ctx)).To(Succeed())
		Expect(p.Close(ctx)).To(Succeed())
		close(outcomes)
		n := 0
		for err := range outcomes {
			Expect(err).NotTo(HaveOccurred())
			n++
		}
		Expect(n).To(Equal(ok), "every accepted message is acknowledged once the cluster is back")
	})
}
