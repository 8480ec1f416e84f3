//go:build e2e

package changefaults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/e2e/internal/program"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// The kill specs run a consumer or a producer in a child process that
// they can SIGKILL: the test binary again, with childEnv set, running
// TestChangeChild only. Anywhere else TestChangeChild does nothing.

// Environment of the child.
const (
	childEnv     = "KEYROUTE_CHANGE_CHILD" // "consumer" or "producer" in the child
	childTopo    = "KEYROUTE_CHANGE_TOPOLOGY"
	childNewTopo = "KEYROUTE_CHANGE_NEW_TOPOLOGY" // the producer's Update
	childTopic   = "KEYROUTE_CHANGE_TOPIC"
	childSub     = "KEYROUTE_CHANGE_SUBSCRIPTION"
	childName    = "KEYROUTE_CHANGE_NAME" // the producer's ledger name
	childKeys    = "KEYROUTE_CHANGE_KEYS" // the producer's keys, comma-separated
)

// TestChangeChild is the child's body. Every line goes out in one write
// (see out), so that a SIGKILL never leaves half a line.
//
// As "consumer" it reads the subscription (from the earliest message,
// AckWithResponse) and acknowledges each message as it takes it, until
// its Health says it holds a moved message; then it takes no more and
// waits to be killed (or for its stdin to close):
//
//	ready            New returned
//	recv <payload>   a message taken, in the order taken
//	ack <payload>    its Ack returned nil: the broker has it
//	holding <n>      Health's Held, summed, is n > 0: it takes no more
//
// As "producer" it sends the keys in turn through SendAsync, one every
// 2 ms, and applies the new topology when its stdin says "update":
//
//	sent <payload>          handed to SendAsync (payloads of ordercheck)
//	ack <payload>           acknowledged
//	fail <payload> <err>    failed
//	updated <epoch> <markers>  Update returned nil
func TestChangeChild(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "consumer":
		consumerChild(t)
	case "producer":
		producerChild(t)
	}
}

var out struct{ mu sync.Mutex }

// say writes one line to stdout with one Write: a write of less than
// PIPE_BUF bytes to a pipe is atomic.
func say(format string, args ...any) {
	out.mu.Lock()
	defer out.mu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

func childTopology(t *testing.T, env string) *topology.Topology {
	topo, err := topology.Load(os.Getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func consumerChild(t *testing.T) {
	ctx := context.Background()
	c, err := consumer.New(ctx, childTopology(t, childTopo), consumer.Topic(os.Getenv(childTopic)), consumer.Subscription(os.Getenv(childSub)),
		consumer.InitialPosition(consumer.Earliest), consumer.AckWithResponse(true))
	if err != nil {
		t.Fatal(err)
	}
	say("ready")
	held := func() int64 {
		var n int64
		for _, h := range c.Health(ctx) {
			n += h.Held
		}
		return n
	}
	for {
		if n := held(); n > 0 {
			say("holding %d", n)
			break
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond) // a poll of Health, not a bound
		m, err := c.Receive(rctx)
		cancel()
		if err != nil {
			continue
		}
		say("recv %s", m.Value)
		if err := c.Ack(ctx, m); err == nil {
			say("ack %s", m.Value)
		}
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = c.Close(ctx)
}

func producerChild(t *testing.T) {
	ctx := context.Background()
	// Nothing decides a hand-over before the parent kills the child.
	p, err := producer.New(ctx, childTopology(t, childTopo), producer.Topic(os.Getenv(childTopic)),
		producer.SendTimeout(time.Hour), producer.HandoverTimeout(time.Hour), producer.OnClusterDown(producer.WaitUp))
	if err != nil {
		t.Fatal(err)
	}
	l := ordercheck.NewLedger()
	name, keys := os.Getenv(childName), strings.Split(os.Getenv(childKeys), ",")
	go func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			<-tick.C
			_, payload := l.Next(name, keys[i%len(keys)])
			say("sent %s", payload)
			p.SendAsync(ctx, &producer.Message{Key: keys[i%len(keys)], Value: payload}, func(_ producer.ID, _ *producer.Message, err error) {
				if err != nil {
					say("fail %s %v", payload, err)
					return
				}
				say("ack %s", payload)
			})
		}
	}()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() != "update" {
			continue
		}
		if err := p.Update(ctx, childTopology(t, childNewTopo)); err != nil {
			t.Errorf("Update: %v", err)
			continue
		}
		ch, _ := p.LastChange()
		say("updated %d %d", ch.Epoch, ch.Markers)
	}
	// The parent kills the child before its stdin closes.
}

// child is one run of TestChangeChild and what it printed. A producer
// child's messages are mirrored into ledger, under the child's own
// names and sequence numbers.
type child struct {
	*program.Child

	mu      sync.Mutex // guards the fields below, written by the stdout reader
	ledger  *ordercheck.Ledger
	sent    map[string]*ordercheck.Sent // payload -> its record in ledger
	recv    []string                    // payloads in the order taken
	acked   map[string]bool
	lines   map[string]string // the last line of each other kind, by its first word
	other   []string
	waiters []chan struct{} // woken at each line
}

// writeTopo writes topo to a file of the spec's and returns its path.
func writeTopo(topo *topology.Topology) string {
	GinkgoHelper()
	f := filepath.Join(GinkgoT().TempDir(), "topology.yaml")
	Expect(topo.WriteFile(f)).To(Succeed())
	return f
}

// startChild starts TestChangeChild with env (childEnv among it).
func startChild(l *ordercheck.Ledger, env ...string) *child {
	GinkgoHelper()
	ch := &child{ledger: l, sent: map[string]*ordercheck.Sent{}, acked: map[string]bool{}, lines: map[string]string{}}
	ch.Child = program.StartChild("TestChangeChild", env, ch.line)
	return ch
}

// line takes one line of the child's stdout.
func (ch *child) line(line string) {
	f := strings.Fields(line)
	ch.mu.Lock()
	switch {
	case len(f) == 2 && f[0] == "sent":
		p, err := ordercheck.Parse([]byte(f[1]))
		if err == nil {
			s, _ := ch.ledger.Next(p.Producer, p.Key) // the same sequence: one sender, in order
			ch.sent[f[1]] = s
		}
	case len(f) == 2 && f[0] == "recv":
		ch.recv = append(ch.recv, f[1])
	case len(f) == 2 && f[0] == "ack":
		ch.acked[f[1]] = true
		if s := ch.sent[f[1]]; s != nil {
			ch.ledger.Done(s, time.Now(), nil)
		}
	case len(f) >= 2 && f[0] == "fail":
		if s := ch.sent[f[1]]; s != nil {
			ch.ledger.Done(s, time.Now(), fmt.Errorf("%s", strings.Join(f[2:], " ")))
		}
	case len(f) > 0 && (f[0] == "ready" || f[0] == "holding" || f[0] == "updated"):
		ch.lines[f[0]] = line
	default: // the testing package's own lines
		ch.other = append(ch.other, line)
	}
	ws := ch.waiters
	ch.waiters = nil
	ch.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

// await waits, within bound, until the child has printed a line that
// begins with word, and returns it.
func (ch *child) await(word string, bound time.Duration) string {
	GinkgoHelper()
	deadline := time.After(bound)
	for {
		ch.mu.Lock()
		line, ok := ch.lines[word]
		w := make(chan struct{})
		ch.waiters = append(ch.waiters, w)
		ch.mu.Unlock()
		if ok {
			return line
		}
		select {
		case <-w:
		case <-ch.Read:
			Fail(fmt.Sprintf("the child exited before %q: %s\nstderr: %s\nother: %v", word, ch.Cmd.ProcessState, ch.Stderr(), ch.other))
		case <-deadline:
			Fail(fmt.Sprintf("no %q from the child within %s", word, bound))
		}
	}
}

// acks returns how many acknowledgements the child printed.
func (ch *child) acks() int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return len(ch.acked)
}
