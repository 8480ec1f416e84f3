//go:build e2e

package consumer

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/topology"
)

// The restart spec runs a consumer in a child process that it can
// SIGKILL: the test binary again, with childEnv set, running
// TestConsumerChild only. Anywhere else TestConsumerChild does nothing.

// Environment of the child.
const (
	childEnv   = "KEYROUTE_CONSUMER_CHILD" // "1" in the child
	childTopo  = "KEYROUTE_CONSUMER_TOPOLOGY"
	childTopic = "KEYROUTE_CONSUMER_TOPIC"
	childSub   = "KEYROUTE_CONSUMER_SUBSCRIPTION"
)

// childAckers is how many goroutines of the child acknowledge: with
// AckWithResponse an Ack waits for the broker's answer, so the child
// acknowledges off its receive loop, as the consumer's doc advises.
const childAckers = 32

func childMode() bool { return os.Getenv(childEnv) == "1" }

// TestConsumerChild reads the subscription the environment names with a
// keyroute consumer (Exclusive, from the earliest message, with
// AckWithResponse) and prints, one write per line, so that a SIGKILL
// never leaves half a line:
//
//	ready                         New returned
//	recv <payload> <id>           a message taken, in the order taken
//	ack <payload> <id>            its Ack returned nil: the broker answered
//	ackerr <payload> <id> <err>   its Ack failed
//	done <received> <acked>       Health's sums after Close
//
// It stops when its stdin is closed: it takes no more messages, waits for
// the Acks in flight, closes the consumer and prints the done line.
func TestConsumerChild(t *testing.T) {
	if !childMode() {
		return
	}
	topo, err := topology.Load(os.Getenv(childTopo))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c, err := consumer.New(ctx, topo, consumer.Topic(os.Getenv(childTopic)), consumer.Subscription(os.Getenv(childSub)),
		consumer.InitialPosition(consumer.Earliest), consumer.AckWithResponse(true))
	if err != nil {
		t.Fatal(err)
	}
	var out lines
	out.printf("ready")
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	work := make(chan *consumer.Message, childAckers)
	var wg sync.WaitGroup
	for range childAckers {
		wg.Go(func() {
			for m := range work {
				if err := c.Ack(context.Background(), m); err != nil {
					out.printf("ackerr %s %s %v", m.Value, m.ID, err)
					continue
				}
				out.printf("ack %s %s", m.Value, m.ID)
			}
		})
	}
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("Receive: %v", err)
			}
			break
		}
		out.printf("recv %s %s", m.Value, m.ID)
		work <- m
	}
	close(work)
	wg.Wait()
	if err := c.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	var received, acked uint64
	for _, h := range c.Health(context.Background()) {
		received += h.Delivered
		acked += h.Acked
	}
	out.printf("done %d %d", received, acked)
}

// lines writes lines to stdout, each with one Write: a write of less than
// PIPE_BUF bytes to a pipe is atomic, so the parent never reads half a
// line, even after a SIGKILL.
type lines struct{ mu sync.Mutex }

func (l *lines) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

// child is one run of TestConsumerChild and what it printed.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	read   chan struct{} // closed when stdout is read to its end
	acks   atomic.Int64

	mu      sync.Mutex        // guards the fields below, written by the stdout reader
	recv    []string          // payloads in the order taken
	ids     map[string]string // payload -> the ID it was taken with (the last copy)
	acked   map[string]bool
	ackErrs []string
	done    string // the done line, "" before
	other   []string
	bad     []string // lines that do not parse
}

// startChild starts TestConsumerChild on the subscription.
func startChild(topoFile, topic, sub string) *child {
	GinkgoHelper()
	ch := &child{read: make(chan struct{}), ids: map[string]string{}, acked: map[string]bool{}}
	ch.cmd = exec.Command(os.Args[0], "-test.run=^TestConsumerChild$", "-test.count=1", "-test.timeout=10m")
	ch.cmd.Env = append(os.Environ(), childEnv+"=1", childTopo+"="+topoFile, childTopic+"="+topic, childSub+"="+sub)
	ch.cmd.Stderr = &ch.stderr
	var err error
	ch.stdin, err = ch.cmd.StdinPipe()
	Expect(err).NotTo(HaveOccurred())
	stdout, err := ch.cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(ch.cmd.Start()).To(Succeed())
	go ch.scan(stdout)
	DeferCleanup(func() { // a failed spec leaves no child behind, and shows its output
		if ch.cmd.ProcessState == nil {
			_ = ch.cmd.Process.Kill()
			<-ch.read
			_ = ch.cmd.Wait()
		}
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("child %s: stderr:\n%s\nother output: %v\n", ch.cmd.ProcessState, ch.stderr.String(), ch.other)
		}
	})
	return ch
}

func (ch *child) scan(stdout io.Reader) {
	defer close(ch.read)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		ch.mu.Lock()
		switch {
		case len(f) == 3 && f[0] == "recv":
			ch.recv = append(ch.recv, f[1])
			ch.ids[f[1]] = f[2]
		case len(f) == 3 && f[0] == "ack":
			ch.acked[f[1]] = true
			ch.acks.Add(1)
		case len(f) >= 3 && f[0] == "ackerr":
			ch.ackErrs = append(ch.ackErrs, line)
		case len(f) == 3 && f[0] == "done":
			ch.done = line
		case len(f) > 0 && (f[0] == "recv" || f[0] == "ack" || f[0] == "done"):
			ch.bad = append(ch.bad, line)
		default: // the testing package's own lines
			ch.other = append(ch.other, line)
		}
		ch.mu.Unlock()
	}
}

// stopIfExited ends an Eventually that waits on the child once the child
// has exited on its own (a failed New, say): it would wait in vain.
func (ch *child) stopIfExited() {
	select {
	case <-ch.read:
		StopTrying("the child exited on its own").Now()
	default:
	}
}

// kill SIGKILLs the child and waits for it.
func (ch *child) kill() {
	GinkgoHelper()
	Expect(ch.cmd.Process.Kill()).To(Succeed())
	<-ch.read
	err := ch.cmd.Wait()
	Expect(err).To(HaveOccurred(), "a SIGKILLed child does not exit 0")
	Expect(ch.cmd.ProcessState.String()).To(ContainSubstring("killed"), "stderr: %s", ch.stderr.String())
}

// finish closes the child's stdin, so that it stops and closes its
// consumer, and waits for it to exit 0.
func (ch *child) finish() {
	GinkgoHelper()
	Expect(ch.stdin.Close()).To(Succeed())
	<-ch.read
	Expect(ch.cmd.Wait()).To(Succeed(), "stderr: %s\nother output: %v", ch.stderr.String(), ch.other)
}

// snapshot returns a consistent copy of what the child printed.
func (ch *child) snapshot() (recv []string, ids map[string]string, acked map[string]bool) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ids, acked = make(map[string]string, len(ch.ids)), make(map[string]bool, len(ch.acked))
	for k, v := range ch.ids {
		ids[k] = v
	}
	for k := range ch.acked {
		acked[k] = true
	}
	return append([]string(nil), ch.recv...), ids, acked
}
