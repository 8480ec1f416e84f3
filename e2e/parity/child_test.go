//go:build e2e

package parity

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// The deduplication spec runs a producer in a child process that it can
// SIGKILL: the test binary again, with childEnv set, running
// TestParityChild only. Anywhere else TestParityChild does nothing.

// Environment of the child.
const (
	childEnv     = "KEYROUTE_PARITY_CHILD" // "1" in the child
	childTopo    = "KEYROUTE_PARITY_TOPOLOGY"
	childTopic   = "KEYROUTE_PARITY_TOPIC"
	childName    = "KEYROUTE_PARITY_NAME"
	childIndices = "KEYROUTE_PARITY_INDICES" // a file of message indices, one a line, increasing
)

func childMode() bool { return os.Getenv(childEnv) == "1" }

// childKey and childValue are the key and value of message i.
func childKey(i int) string   { return "dedup-" + strconv.Itoa(i) }
func childValue(i int) string { return strconv.Itoa(i) }

// TestParityChild sends the messages whose indices the file names, in that
// order, with SequenceID = index, through a producer named by the
// environment (Batching off, 64 messages in flight at most), and prints a
// line "ack <index> <ledger> <entry>" for each acknowledged message, or
// "fail <index> <error>". It exits once every message has its outcome.
func TestParityChild(t *testing.T) {
	if !childMode() {
		return
	}
	topo, err := topology.Load(os.Getenv(childTopo))
	if err != nil {
		t.Fatal(err)
	}
	indices, err := readIndices(os.Getenv(childIndices))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A broker may not have seen the SIGKILLed predecessor's connection
	// close yet, and refuses a second producer with the same name until
	// it has: try again until ctx ends.
	var p *producer.Producer
	for {
		p, err = producer.New(ctx, topo, producer.Topic(os.Getenv(childTopic)), producer.Name(os.Getenv(childName)),
			producer.Batching(false), producer.MaxPendingMessages(64))
		if err == nil {
			break
		}
		fmt.Fprintf(os.Stderr, "New: %v\n", err)
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex // out, written from every cluster's callback goroutine
	for _, i := range indices {
		seq := int64(i)
		p.SendAsync(ctx, &producer.Message{Key: childKey(i), Value: []byte(childValue(i)), SequenceID: &seq},
			func(id producer.ID, _ *producer.Message, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					fmt.Fprintf(out, "fail %d %v\n", i, err)
				} else {
					fmt.Fprintf(out, "ack %d %d %d\n", i, id.MessageID.LedgerID(), id.MessageID.EntryID())
				}
				out.Flush() // a line the parent reads is an acknowledgement it knows of
			})
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func readIndices(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		i, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, nil
}
