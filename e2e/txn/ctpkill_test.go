//go:build e2e

package txn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/consume"
	"github.com/keyroute/keyroute/e2e/internal/program"
	"github.com/keyroute/keyroute/producer"
)

// procLine is one stdout line of a ctpproc process and when it arrived.
type procLine struct {
	at time.Time
	f  []string
}

// proc is one ctpproc process (e2e/internal/ctpproc).
type proc struct {
	name   string
	cmd    *exec.Cmd
	ch     chan procLine // stdout lines; closed at EOF
	lines  []procLine    // the lines taken from ch, by the spec's goroutine
	stderr bytes.Buffer  // read only after exited is closed
	exited chan struct{} // closed once the process has exited
	err    error         // Wait's error, valid after exited
}

func startProc(ctx context.Context, bin, name string, args ...string) *proc {
	p := &proc{name: name, ch: make(chan procLine, 1<<14), exited: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, bin, append([]string{"-name", name}, args...)...)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(p.cmd.Start()).To(Succeed())
	GinkgoWriter.Printf("%s: started, pid %d\n", name, p.cmd.Process.Pid)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.ch <- procLine{at: time.Now(), f: strings.Fields(sc.Text())}
		}
		close(p.ch)
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p
}

// next returns the process's next stdout line, failing the spec if the
// process ends first.
func (p *proc) next(ctx context.Context) procLine {
	select {
	case l, ok := <-p.ch:
		if !ok {
			<-p.exited
			Fail(fmt.Sprintf("%s ended on its own (%v); stderr:\n%s", p.name, p.err, p.stderr.String()))
		}
		p.lines = append(p.lines, l)
		return l
	case <-ctx.Done():
		Fail(fmt.Sprintf("%s: %v while waiting for a line; last lines: %v", p.name, ctx.Err(), p.tail()))
	}
	return procLine{}
}

// until reads lines until one is of kind (its first field).
func (p *proc) until(ctx context.Context, kind string) procLine {
	for {
		if l := p.next(ctx); len(l.f) > 0 && l.f[0] == kind {
			return l
		}
	}
}

// finish waits for the process to end and takes its remaining lines.
func (p *proc) finish(ctx context.Context) {
	for {
		select {
		case l, ok := <-p.ch:
			if !ok {
				select {
				case <-p.exited:
					return
				case <-ctx.Done():
					Fail(fmt.Sprintf("%s: %v while waiting for its exit", p.name, ctx.Err()))
				}
			}
			p.lines = append(p.lines, l)
		case <-ctx.Done():
			Fail(fmt.Sprintf("%s: %v while waiting for its exit", p.name, ctx.Err()))
		}
	}
}

func (p *proc) tail() []string {
	var out []string
	for _, l := range p.lines[max(0, len(p.lines)-5):] {
		out = append(out, strings.Join(l.f, " "))
	}
	return out
}

// commitTimes returns how long this process's finished commits took
// (commit line to done line), in order.
func (p *proc) commitTimes() []time.Duration {
	start := map[string]time.Time{}
	var out []time.Duration
	for _, l := range p.lines {
		switch l.f[0] {
		case "commit":
			start[l.f[1]] = l.at
		case "done":
			out = append(out, l.at.Sub(start[l.f[1]]))
		}
	}
	return out
}

// inFlight returns the tag whose commit line has no done line (the
// transaction a kill interrupted), or "".
func (p *proc) inFlight() string {
	tag := ""
	for _, l := range p.lines {
		switch l.f[0] {
		case "commit":
			tag = l.f[1]
		case "done":
			tag = ""
		}
	}
	return tag
}

// medianDur is median (bench_test.go) over durations.
func medianDur(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(median(xs))
}

// txnAbortedOn asks the broker at adminURL whether the Pulsar transaction
// (most, least) was aborted on topic (one partition).
func txnAbortedOn(ctx context.Context, adminURL, topic string, most, least uint64) (bool, error) {
	url := fmt.Sprintf("%s/admin/v3/transactions/transactionInBufferStats/%s/%d/%d",
		adminURL, strings.TrimPrefix(topic, "persistent://"), most, least)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var st struct {
		Aborted bool `json:"aborted"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return false, fmt.Errorf("GET %s: %w", url, err)
	}
	return st.Aborted, nil
}

var _ = Describe("consume, transform and produce in one transaction, processor killed", func() {
	It("writes every input exactly once, in key order, across SIGKILLs of the processor process mid-stream, and leaves no backlog", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 5*time.Minute)
		defer cancel()
		const n, keys, batch, kills = 900, 60, 25, 2
		// The killed processors' open transactions hold their inputs until
		// the broker aborts them at this timeout.
		const txnTimeout = 10 * time.Second
		seed := GinkgoRandomSeed()
		rng := rand.New(rand.NewPCG(uint64(seed), 35))
		GinkgoWriter.Printf("kill plan seed %d (ginkgo --seed)\n", seed)

		dir := GinkgoT().TempDir()
		bin := program.Build("./e2e/internal/ctpproc", dir)
		topo := bed.Topology()
		for i := range topo.Clusters {
			topo.Clusters[i].Client.OperationTimeout = 10 * time.Second
			topo.Clusters[i].Client.ConnectionTimeout = 3 * time.Second
		}
		topoFile := filepath.Join(dir, "topology.yaml")
		Expect(topo.WriteFile(topoFile)).To(Succeed())

		in, out := uniqueTopic("ctpkill-in"), uniqueTopic("ctpkill-out")
		Expect(createTopic(ctx, bed, in)).To(Succeed())
		Expect(createTopic(ctx, bed, out)).To(Succeed())
		src, err := newProducer(ctx, bed, in)
		Expect(err).NotTo(HaveOccurred())
		for i := range n {
			k := fmt.Sprintf("k%02d", i%keys)
			_, err := src.Send(ctx, &producer.Message{Key: k, Value: fmt.Appendf(nil, "%s/%05d", k, i/keys)})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(src.Close(ctx)).To(Succeed())

		args := []string{"-topology", topoFile, "-in", in, "-out", out, "-sub", "ctpkill",
			"-batch", strconv.Itoa(batch), "-txn-timeout", txnTimeout.String(), "-partitions", strconv.Itoa(partitions)}
		var procs []*proc
		killedIn := map[string]bool{} // the tags a kill interrupted
		for i := 1; i <= kills; i++ {
			p := startProc(ctx, bin, fmt.Sprintf("p%d", i), args...)
			procs = append(procs, p)
			GinkgoWriter.Printf("%s: %v\n", p.name, p.until(ctx, "fenced").f)
			p.until(ctx, "ready")
			// Let it commit a few transactions, then kill it either inside
			// its next commit (at a random fraction of its commits'
			// median time: in the sends, the acks or the commits) or
			// anywhere in its loop (a random fraction of its median loop
			// time after a commit). The first kill is inside a commit, so
			// that every run leaves a transaction open for the next.
			commits := 2 + rng.IntN(6)
			var dones []time.Time
			for len(dones) < commits {
				dones = append(dones, p.until(ctx, "done").at)
			}
			inCommit := i == 1 || rng.IntN(2) == 0
			var at time.Duration
			if inCommit {
				p.until(ctx, "commit")
				at = time.Duration(rng.Float64() * float64(medianDur(p.commitTimes())))
			} else {
				var loops []time.Duration
				for j := 1; j < len(dones); j++ {
					loops = append(loops, dones[j].Sub(dones[j-1]))
				}
				at = time.Duration(rng.Float64() * float64(medianDur(loops)))
			}
			time.Sleep(at)
			Expect(p.cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
			p.finish(ctx)
			ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
			Expect(ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL).To(BeTrue(),
				"%s died of the kill (%v); stderr:\n%s", p.name, p.err, p.stderr.String())
			if tag := p.inFlight(); tag != "" {
				killedIn[tag] = true
			}
			GinkgoWriter.Printf("%s: SIGKILL %s after %d commits (inside a commit: %v, %s in), in flight: %q, last lines %v\n",
				p.name, time.Now().UTC().Format(time.RFC3339Nano), commits, inCommit, at, p.inFlight(), p.tail())
		}

		// The last processor finishes the work and exits at backlog 0.
		fin := startProc(ctx, bin, "final", append(args, "-drain", "-deadline", time.Until(deadlineOf(ctx)).String())...)
		procs = append(procs, fin)
		fin.finish(ctx)
		GinkgoWriter.Printf("final: %v\n", fin.lines[0].f)
		for _, p := range procs {
			if p.stderr.Len() > 0 {
				GinkgoWriter.Printf("--- %s stderr\n%s\n", p.name, p.stderr.String())
			}
		}
		Expect(fin.err).NotTo(HaveOccurred(), "final processor; stderr:\n%s", fin.stderr.String())
		Expect(fin.lines[len(fin.lines)-1].f).To(Equal([]string{"drained"}))

		// What each process logged: the Pulsar transaction of each tag on
		// each cluster, and the tags whose Commit returned nil.
		type tagCluster struct{ tag, cluster string }
		txnOf := map[tagCluster][][2]uint64{}
		committed := map[string]bool{}
		processed := map[string]int{}
		for _, p := range procs {
			for _, l := range p.lines {
				switch l.f[0] {
				case "ack":
					most, err1 := strconv.ParseUint(l.f[3], 10, 64)
					least, err2 := strconv.ParseUint(l.f[4], 10, 64)
					Expect(err1).NotTo(HaveOccurred())
					Expect(err2).NotTo(HaveOccurred())
					tc := tagCluster{l.f[1], l.f[2]}
					txnOf[tc] = append(txnOf[tc], [2]uint64{most, least})
				case "done":
					committed[l.f[1]] = true
					processed[p.name]++
				}
			}
		}
		GinkgoWriter.Printf("commits per process: %v\n", processed)
		Expect(processed["final"]).To(BeNumerically(">", 0), "the kills came mid-stream: the final processor had work")

		// Backlog 0 on every cluster, asked by a consumer of its own.
		chk, err := consumer.New(ctx, bed.Topology(), consumer.Topic(in), consumer.Subscription("ctpkill"))
		Expect(err).NotTo(HaveOccurred())
		for _, h := range chk.Health(ctx) {
			Expect(h.BacklogErr).NotTo(HaveOccurred())
			Expect(h.Backlog).To(BeZero(), "backlog of %s", h.Cluster)
		}
		Expect(chk.Close(ctx)).To(Succeed())

		// Read the output whole; the broker says which transaction each
		// output's is, committed or aborted. The outputs of aborted
		// transactions are delivered too (apache/pulsar-client-go#1498), so
		// a count of n says nothing: the read goes on until every input has
		// an output, or up to shortly before the spec's deadline, so that a
		// missing output is reported below as such.
		rctx, rcancel := context.WithDeadline(ctx, deadlineOf(ctx).Add(-30*time.Second))
		defer rcancel()
		got, err := consume.Until(rctx, bed.Clusters(), out, "check", func(got []consume.Received) bool {
			inputs := map[string]bool{}
			for _, m := range got {
				v, _, _ := strings.Cut(strings.TrimPrefix(m.Payload, "out:"), "|")
				inputs[v] = true
			}
			return len(inputs) >= n
		}, 2*time.Second)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			GinkgoWriter.Printf("read of the outputs stopped by its deadline with %d read\n", len(got))
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		admins := map[string]string{}
		for _, c := range bed.Clusters() {
			admins[c.Name] = c.AdminURL
		}
		type where struct {
			cluster   string
			partition int
			txn       [2]uint64
		}
		abortedAt := map[where]bool{}
		seen := map[string]int{}
		last := map[string]string{}
		reordered, dropped := 0, 0
		for _, m := range got {
			v, tag, ok := strings.Cut(strings.TrimPrefix(m.Payload, "out:"), "|")
			Expect(ok).To(BeTrue(), "output %q", m.Payload)
			ids := txnOf[tagCluster{tag, m.Cluster}]
			Expect(len(ids)).To(BeNumerically("<=", 1), "%s on %s: one Pulsar transaction per attempt that wrote", tag, m.Cluster)
			aborted := len(ids) == 0 // no ack there: the commits never started
			if !aborted {
				w := where{m.Cluster, m.Partition, ids[0]}
				a, known := abortedAt[w]
				if !known {
					a, err = txnAbortedOn(ctx, admins[m.Cluster], fmt.Sprintf("%s-partition-%d", out, m.Partition), w.txn[0], w.txn[1])
					Expect(err).NotTo(HaveOccurred())
					abortedAt[w] = a
				}
				aborted = a
			}
			if aborted {
				Expect(committed[tag]).To(BeFalse(), "%s: Commit returned nil but the broker aborted its transaction on %s", tag, m.Cluster)
				Expect(killedIn[tag]).To(BeTrue(), "%s: output of an aborted transaction that no kill interrupted", tag)
				dropped++
				continue
			}
			seen[v]++
			if v < last[m.Key] {
				reordered++
			}
			last[m.Key] = v
		}
		GinkgoWriter.Printf("inputs %d, outputs read %d, of aborted transactions %d (delivered: apache/pulsar-client-go#1498), counted %d, distinct %d\n",
			n, len(got), dropped, len(got)-dropped, len(seen))
		missing, twice := 0, 0
		for i := range n {
			k := fmt.Sprintf("k%02d", i%keys)
			switch seen[fmt.Sprintf("%s/%05d", k, i/keys)] {
			case 0:
				missing++
			case 1:
			default:
				twice++
			}
		}
		Expect(missing).To(BeZero(), "inputs without a committed output")
		Expect(twice).To(BeZero(), "inputs with more than one committed output")
		Expect(seen).To(HaveLen(n), "no committed output of something that was not an input")
		Expect(reordered).To(BeZero(), "committed outputs follow their inputs' order per key")
	})
})

// deadlineOf returns ctx's deadline (ctx must have one).
func deadlineOf(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	Expect(ok).To(BeTrue())
	return d
}
