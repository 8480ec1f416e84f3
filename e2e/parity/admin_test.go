//go:build e2e

package parity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
)

// Admin API calls the specs need beyond internal/admin: namespace
// policies, schemas, topic statistics and stored entries.

// adminDo sends method to path (below the cluster's admin URL) with body
// encoded as JSON (none when nil) and returns the answer's status, header
// and body; it fails the spec when the call itself fails.
func adminDo(ctx context.Context, c *testbed.Cluster, method, path string, body any) (int, http.Header, []byte) {
	GinkgoHelper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.AdminURL+path, rd)
	Expect(err).NotTo(HaveOccurred())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := bed.HTTPClient().Do(req)
	Expect(err).NotTo(HaveOccurred(), "%s %s on %s", method, path, c.Name)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Header, b
}

// adminCall is adminDo for a call that must succeed; the answer is
// decoded into out unless out is nil.
func adminCall(ctx context.Context, c *testbed.Cluster, method, path string, body, out any) {
	GinkgoHelper()
	status, _, b := adminDo(ctx, c, method, path, body)
	Expect(status/100).To(Equal(2), "%s %s on %s: %d %s", method, path, c.Name, status, b)
	if out != nil {
		Expect(json.Unmarshal(b, out)).To(Succeed(), "%s %s on %s: %s", method, path, c.Name, b)
	}
}

// newNamespace creates a namespace with a unique name under the public
// tenant on every cluster and returns it ("public/<name>-...").
func newNamespace(ctx context.Context, name string) string {
	GinkgoHelper()
	ns := "public/" + bedsuite.Unique(name)
	for _, c := range bed.Clusters() {
		adminCall(ctx, c, http.MethodPut, "/admin/v2/namespaces/"+ns, nil, nil)
	}
	return ns
}

// topicPath turns "persistent://tenant/ns/topic" into "tenant/ns/topic".
func topicPath(topic string) string { return strings.TrimPrefix(topic, "persistent://") }

// partitionStats is the part of a partition's statistics the specs read.
type partitionStats struct {
	BytesInCounter      int64  `json:"bytesInCounter"`
	MsgInCounter        int64  `json:"msgInCounter"`
	DeduplicationStatus string `json:"deduplicationStatus"`
	Publishers          []struct {
		ProducerName string `json:"producerName"`
		Address      string `json:"address"`
	} `json:"publishers"`
	Subscriptions map[string]struct {
		Consumers []struct {
			Address string `json:"address"`
		} `json:"consumers"`
	} `json:"subscriptions"`
}

// topicStats returns the statistics of every partition of topic on c, by
// partition topic name.
func topicStats(ctx context.Context, c *testbed.Cluster, topic string) map[string]partitionStats {
	GinkgoHelper()
	var out struct {
		Partitions map[string]partitionStats `json:"partitions"`
	}
	adminCall(ctx, c, http.MethodGet, "/admin/v2/persistent/"+topicPath(topic)+"/partitioned-stats?perPartition=true", nil, &out)
	Expect(out.Partitions).To(HaveLen(partitions), "%s on %s", topic, c.Name)
	return out.Partitions
}

// stored is the broker's copy of one entry, as its admin API returns it
// (GET .../ledger/{ledger}/entry/{entry}): the payload and the X-Pulsar-*
// headers that describe its metadata.
type stored struct {
	body   []byte
	header http.Header
}

// storedEntry reads the entry of partition part of topic on c that holds
// the message id (of a chunked message, its last chunk).
func storedEntry(ctx context.Context, c *testbed.Cluster, topic string, part int, id pulsar.MessageID) stored {
	GinkgoHelper()
	path := fmt.Sprintf("/admin/v2/persistent/%s-partition-%d/ledger/%d/entry/%d", topicPath(topic), part, id.LedgerID(), id.EntryID())
	status, header, body := adminDo(ctx, c, http.MethodGet, path, nil)
	Expect(status).To(Equal(http.StatusOK), "%s on %s: %s", path, c.Name, body)
	return stored{body: body, header: header}
}
