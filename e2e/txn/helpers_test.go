//go:build e2e

package txn

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keyroute/keyroute/e2e/internal/consume"
	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
)

const partitions = 4

func uniqueTopic(prefix string) string {
	return "persistent://public/default/txn-" + prefix + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// createTopic creates topic with `partitions` partitions on every cluster of
// b that is running.
func createTopic(ctx context.Context, b *testbed.Bed, topic string) error {
	for _, c := range b.Clusters() {
		if !c.Running() {
			continue
		}
		if err := admin.CreatePartitionedTopic(ctx, c.AdminURL, topic, partitions); err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return nil
}

// newProducer opens a transactional producer on every cluster of b, with a
// short operation timeout so that calls to a dead cluster fail quickly. It
// waits for every cluster (RequireAllClusters): the specs place keys on
// clusters they expect up.
func newProducer(ctx context.Context, b *testbed.Bed, topic string, opts ...producer.Opt) (*producer.Producer, error) {
	topo := b.Topology()
	for i := range topo.Clusters {
		topo.Clusters[i].Client.OperationTimeout = 10 * time.Second
		topo.Clusters[i].Client.ConnectionTimeout = 3 * time.Second
	}
	opts = append([]producer.Opt{producer.Topic(topic), producer.Transactions(true), producer.RequireAllClusters(true)}, opts...)
	for {
		p, err := producer.New(ctx, topo, opts...)
		if err == nil || !bookiesFlapping(err) || ctx.Err() != nil {
			return p, err
		}
		select { // a standalone restarted by an earlier spec
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Second):
		}
	}
}

// bookiesFlapping reports whether err is a standalone's refusal to make a
// ledger for a new topic, which a standalone restarted after a SIGKILL
// gives for a while after it first wrote again (its old bookie
// registration expires after the new one was made).
func bookiesFlapping(err error) bool {
	return strings.Contains(err.Error(), "Not enough non-faulty bookies")
}

// got is one consumed message.
type got struct {
	cluster   string
	partition int
	key       string
	value     string
}

// drain reads every message of topic on cluster c from the earliest
// position with a fresh subscription, until quiet passes without a message
// (and at least minMsgs messages arrived, or 60 s passed).
func drain(ctx context.Context, c *testbed.Cluster, topic string, minMsgs int, quiet time.Duration) ([]got, error) {
	dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	sub := "drain-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ms, err := consume.All(dctx, []*testbed.Cluster{c}, topic, sub, minMsgs, quiet)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = nil // short of minMsgs after 60 s: the caller counts
	}
	out := make([]got, len(ms))
	for i, m := range ms {
		out[i] = got{cluster: m.Cluster, partition: m.Partition, key: m.Key, value: m.Payload}
	}
	return out, err
}

// txnMetrics returns the broker's transaction coordinator counters
// (pulsar_txn_created_total, pulsar_txn_aborted_total, ...) summed over
// coordinators, from the Prometheus endpoint.
func txnMetrics(ctx context.Context, adminURL string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/metrics/", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics/: %s", adminURL, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "pulsar_txn_") {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			// A trailing timestamp: the value is the one before it.
			if len(f) >= 2 {
				v, err = strconv.ParseFloat(f[len(f)-2], 64)
			}
			if err != nil {
				continue
			}
		}
		out[name] += v
	}
	return out, sc.Err()
}

// tbStats is the part of the broker's TransactionBufferStats the suite
// reads (GET /admin/v3/transactions/transactionBufferStats/{tenant}/{ns}/{topic}).
type tbStats struct {
	State                    string `json:"state"`
	OngoingTxnSize           int64  `json:"ongoingTxnSize"`
	TotalAbortedTransactions int64  `json:"totalAbortedTransactions"`
}

// abortedInBuffers sums totalAbortedTransactions over the partitions of
// topic on one cluster.
func abortedInBuffers(ctx context.Context, adminURL, topic string) (int64, []tbStats, error) {
	local := strings.TrimPrefix(topic, "persistent://")
	var sum int64
	var all []tbStats
	for i := range partitions {
		url := fmt.Sprintf("%s/admin/v3/transactions/transactionBufferStats/%s-partition-%d", adminURL, local, i)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		var st tbStats
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return 0, nil, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			return 0, nil, err
		}
		sum += st.TotalAbortedTransactions
		all = append(all, st)
	}
	return sum, all, nil
}

var errInjected = errors.New("injected before the first commit")

// keysFor returns n keys for each cluster name, by Placement.
func keysFor(p *producer.Producer, n int) map[string][]string {
	out := map[string][]string{}
	need := len(p.Clusters())
	for i := 0; need > 0; i++ {
		k := fmt.Sprintf("key-%d", i)
		c, _ := p.Placement(k)
		if len(out[c]) < n {
			out[c] = append(out[c], k)
			if len(out[c]) == n {
				need--
			}
		}
	}
	return out
}
