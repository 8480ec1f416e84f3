//go:build e2e

package consumer

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/topology"
)

func TestConsumer(t *testing.T) {
	if childMode() {
		t.Skip("a child process of the restart spec runs TestConsumerChild only")
	}
	bedsuite.Run(t, "Consumer E2E Suite")
}

const (
	// clusters is how many clusters the suite starts.
	clusters = 5
	// partitions is the partition count of every test topic on every
	// cluster.
	partitions = 4
	// opTimeout is every cluster client's OperationTimeout (topology
	// Client settings), the consumers' and the producers': how long
	// pulsar-client-go gives a broker to answer a request (subscribe,
	// lookup, close) before it counts as failed. Bounds below derive from
	// it.
	opTimeout = 30 * time.Second
	// quiet is how long a spec keeps reading after the last message it
	// expects, to see late copies: an observation period, not a bound.
	quiet = 2 * time.Second
)

var (
	suite *bedsuite.Suite
	bed   *testbed.Bed
)

var _ = BeforeSuite(func() {
	suite = bedsuite.Start(testbed.Options{Clusters: clusters})
	bed = suite.Bed
})

// lingering are the goroutines a spec may leave that are not the
// consumer's to end, and the reason for each:
var lingering = []goleak.Option{
	// A partition producer's failTimeoutMessages ends at its timer's next
	// tick after Close, up to the producer's SendTimeout later
	// (pulsar-client-go producer_partition.go). The producers only write
	// the specs' input.
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar.(*partitionProducer).failTimeoutMessages"),
	// The test bed proves each cluster ready with a transactional
	// client, which it closes; pulsar-client-go v0.21.0's transaction
	// coordinator client of a closed client still reconnects, at any
	// time, and its connection runs for the life of the process (see
	// e2e/txn's lifecycle spec). Only the goroutines of a connection and
	// of that coordinator: an unclosed consumer's client still leaves
	// its connection pool's and partition consumers' goroutines.
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar/internal.(*connection).run"),
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar/internal.(*connection).runPingCheck"),
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar/internal.(*connectionReader).readFromConnection"),
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar.(*transactionHandler).runEventsLoop"),
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar.(*transactionHandler).grabConn.func1"),
}

// Every spec must leave no goroutine behind once what it opened is closed
// (its DeferCleanups run before this one, registered first). Closing a
// pulsar-client-go consumer and client waits for the broker's answers, up
// to the operation timeout; goroutines still running after that leak.
var _ = BeforeEach(func() {
	before := goleak.IgnoreCurrent()
	conns := adminConnsLeft()
	DeferCleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		var leak error
		Eventually(func() error {
			leak = goleak.Find(append([]goleak.Option{before}, lingering...)...)
			return leak
		}).WithTimeout(opTimeout).WithPolling(opTimeout/100).Should(Succeed(), "goroutines left by the spec")
		// The consumer's admin connections are in the check above: its
		// Close releases them (they used to idle for 90 s).
		Expect(adminConnsLeft()-conns).To(BeNumerically("<=", 0), "admin HTTP connections left open by the spec")
	})
})

// adminConnsLeft counts the open keep-alive HTTP connections of the
// process: the goroutines running a persistConn's read loop.
func adminConnsLeft() int {
	buf := make([]byte, 1<<24)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "net/http.(*persistConn).readLoop(")
}

// adminGet GETs path on c's admin API, decodes the body into v when the
// answer is 200 OK and v is not nil, and returns the HTTP status.
func adminGet(ctx context.Context, c *testbed.Cluster, path string, v any) int {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.AdminURL+path, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	if resp.StatusCode == http.StatusOK && v != nil {
		Expect(json.Unmarshal(body, v)).To(Succeed(), "%s", body)
	}
	return resp.StatusCode
}

// topicPath is the admin API path of a persistent topic.
func topicPath(topic string) string {
	return "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
}

// backlogs returns the subscription's backlog on every cluster of the
// bed, read from the admin API (partitioned stats), by cluster.
func backlogs(ctx context.Context, topic, sub string) map[string]int64 {
	GinkgoHelper()
	out := map[string]int64{}
	for _, c := range bed.Clusters() {
		var stats struct {
			Subscriptions map[string]struct {
				MsgBacklog int64 `json:"msgBacklog"`
			} `json:"subscriptions"`
		}
		Expect(adminGet(ctx, c, topicPath(topic)+"/partitioned-stats", &stats)).To(Equal(http.StatusOK), c.Name)
		s, ok := stats.Subscriptions[sub]
		Expect(ok).To(BeTrue(), "subscription %s on %s", sub, c.Name)
		out[c.Name] = s.MsgBacklog
	}
	return out
}

// topo returns the bed's topology with every client's operation timeout
// set to opTimeout.
func topo() *topology.Topology {
	t := bed.Topology()
	for i := range t.Clusters {
		t.Clusters[i].Client.OperationTimeout = opTimeout
	}
	return t
}

// newTopic creates a partitioned topic with a unique name on the given
// clusters (every cluster when none is given).
func newTopic(ctx context.Context, name string, on ...*testbed.Cluster) string {
	GinkgoHelper()
	if len(on) == 0 {
		on = bed.Clusters()
	}
	topic := "persistent://public/default/" + bedsuite.Unique(name)
	bedsuite.CreateTopic(ctx, on, topic, partitions)
	return topic
}

// specCtx bounds a spec: a guard against a hang, not a timing assertion.
func specCtx(sctx SpecContext, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(sctx, d)
	DeferCleanup(cancel)
	return ctx
}
