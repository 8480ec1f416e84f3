//go:build e2e

package changefaults

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
)

func TestChangeFaults(t *testing.T) { bedsuite.Run(t, "Change Fault Suite") }

var (
	bed *testbed.Bed
	// namespace is where the specs' topics live, on every cluster, with
	// topic auto-creation off: a topic missing on a cluster is refused
	// there instead of made on first use, the specs' way to make a
	// cluster refuse a producer or consumer. (The bed's own readiness
	// probe needs auto-creation in its namespace, so the broker keeps it.)
	namespace string
)

var _ = BeforeSuite(func(sctx SpecContext) {
	bed = bedsuite.Start(testbed.Options{Clusters: 3}).Bed
	ctx, cancel := context.WithTimeout(sctx, time.Minute)
	defer cancel()
	namespace = "public/" + bedsuite.Unique("strict")
	for _, c := range bed.Clusters() {
		adminCall(ctx, c, http.MethodPut, "/admin/v2/namespaces/"+namespace, "")
		adminCall(ctx, c, http.MethodPost, "/admin/v2/namespaces/"+namespace+"/autoTopicCreation",
			`{"allowAutoTopicCreation": false, "topicType": "non-partitioned"}`)
	}
})

// adminCall calls c's admin API and fails the spec unless it answers 2xx.
func adminCall(ctx context.Context, c *testbed.Cluster, method, path, body string) {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, method, c.AdminURL+path, bytes.NewBufferString(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred(), "%s %s on %s", method, path, c.Name)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	Expect(resp.StatusCode/100).To(Equal(2), "%s %s on %s: %d %s", method, path, c.Name, resp.StatusCode, b)
}

// specCtx bounds a spec's calls; it ends with the spec.
func specCtx(sctx SpecContext, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(sctx, d)
	DeferCleanup(cancel)
	return ctx
}
