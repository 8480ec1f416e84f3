//go:build e2e

package security

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gopkg.in/yaml.v3"

	"github.com/keyroute/keyroute/e2e/internal/standalone"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// partitions is the partition count of every test topic.
const partitions = 3

var _ = Describe("secure clusters", Ordered, func() { // the restart spec runs last: see e2e/faults on new topics after a restart
	It("produce with Send and SendAsync on both clusters, readable with the same TLS and token", func(ctx SpecContext) {
		topo := bed.Topology()
		Expect(topo.Validate()).To(Succeed())
		for _, c := range topo.Clusters {
			Expect(c.ServiceURL).To(HavePrefix("pulsar+ssl://"), c.Name)
			Expect(c.AdminURL).To(HavePrefix("https://"), c.Name)
			Expect(c.TLS.CAFile).NotTo(BeEmpty(), c.Name)
			Expect(c.Auth.TokenFile).NotTo(BeEmpty(), c.Name)
		}
		topic := newTopic(ctx, "roundtrip")
		var logs syncBuffer
		p, err := producer.New(ctx, topo, producer.Topic(topic), producer.Logger(debugLogger(&logs)))
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Partitions()).To(Equal([]int{partitions, partitions}))

		sent := map[string][]string{} // cluster -> payloads
		var mu sync.Mutex
		record := func(id producer.ID, payload string) {
			mu.Lock()
			defer mu.Unlock()
			sent[id.Cluster] = append(sent[id.Cluster], payload)
		}
		const n = 40
		for i := range n {
			msg := &producer.Message{Key: "key-" + strconv.Itoa(i), Value: []byte("sync-" + strconv.Itoa(i))}
			id, err := p.Send(ctx, msg)
			Expect(err).NotTo(HaveOccurred(), "Send %d", i)
			record(id, string(msg.Value))
		}
		var failed []error
		for i := range n {
			msg := &producer.Message{Key: "key-" + strconv.Itoa(i), Value: []byte("async-" + strconv.Itoa(i))}
			p.SendAsync(ctx, msg, func(id producer.ID, m *producer.Message, err error) {
				if err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
					return
				}
				record(id, string(m.Value))
			})
		}
		Expect(p.Flush(ctx)).To(Succeed())
		Expect(p.Close(ctx)).To(Succeed())
		Expect(failed).To(BeEmpty())

		for _, c := range topo.Clusters {
			want := sent[c.Name]
			Expect(want).NotTo(BeEmpty(), "keys must reach %s", c.Name)
			got, err := consume(ctx, c, topic, len(want))
			Expect(err).NotTo(HaveOccurred(), c.Name)
			Expect(got).To(ConsistOf(want), c.Name)
			GinkgoWriter.Printf("%s: %d messages produced and consumed over TLS with a token\n", c.Name, len(want))
		}
		Expect(sent).To(HaveLen(clusters))
		expectNoSecrets(logs.String(), "producer log")
	}, SpecTimeout(5*time.Minute))

	DescribeTable("fail naming exactly the cluster whose configuration is wrong",
		func(ctx SpecContext, cause string, breakIt func(c *topology.Cluster) (token string)) {
			topo := bed.Topology()
			for i := range topo.Clusters {
				// Fail fast: pulsar-client-go retries lookups until the
				// operation timeout.
				topo.Clusters[i].Client.OperationTimeout = 10 * time.Second
				topo.Clusters[i].Client.ConnectionTimeout = 5 * time.Second
			}
			victim := &topo.Clusters[clusters-1]
			wrong := breakIt(victim)
			Expect(topo.Validate()).To(Succeed(), "the mistake must not be one Validate catches")

			var logs syncBuffer
			start := time.Now()
			// RequireAllClusters: pulsar-client-go only times out on these
			// mistakes, which a degraded start takes for a cluster that
			// does not answer yet (it would start down, Health naming why).
			p, err := producer.New(ctx, topo, producer.Topic(newTopic(ctx, "broken")),
				producer.Logger(debugLogger(&logs)), producer.RequireAllClusters(true))
			if p != nil {
				p.Close(ctx)
			}
			GinkgoWriter.Printf("producer.New failed after %s: %v\n", time.Since(start).Round(time.Millisecond), err)
			Expect(err).To(HaveOccurred())
			Expect(errors.Is(err, producer.ErrConnect)).To(BeTrue(), "errors.Is ErrConnect: %v", err)
			var ce *producer.ClusterError
			Expect(errors.As(err, &ce)).To(BeTrue(), "a *producer.ClusterError: %v", err)
			Expect(ce.Cluster).To(Equal(victim.Name))
			var names []string
			for _, e := range clusterErrors(err) {
				names = append(names, e.Cluster)
			}
			Expect(names).To(Equal([]string{victim.Name}), "only the broken cluster is named")
			Expect(err.Error()).To(ContainSubstring(victim.Name))

			texts := []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), logs.String(), bedLog.String()}
			for i, s := range texts {
				expectNoSecrets(s, "text "+strconv.Itoa(i))
				if wrong != "" {
					Expect(s).NotTo(ContainSubstring(wrong), "text %d shows the wrong token", i)
				}
			}
			// pulsar-client-go's error only says that the lookup timed out
			// ("connection error"); its log says why. Check that the
			// failure is the intended one, not some other breakage.
			for _, l := range firstLines(logs.String(), 2, "level=WARN", "level=ERROR") {
				GinkgoWriter.Printf("  client log: %s\n", l)
			}
			Expect(logs.String()).To(ContainSubstring(cause), "the client log names the cause")
			if wrong != "" {
				// Not ours to promise, but worth knowing: the broker's log.
				b, _ := os.ReadFile(bed.Cluster(victim.Name).LogPath())
				Expect(string(b)).NotTo(ContainSubstring(wrong), "the broker logged the token")
			}
		},
		Entry("a token signed with another key", "Failed to authenticate", func(c *topology.Cluster) string {
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			c.Auth = topology.Auth{Token: testbed.SignToken(key, testbed.ClientRole)}
			return c.Auth.Token
		}, SpecTimeout(2*time.Minute)),
		Entry("a token that is not a JWT", "Failed to authenticate", func(c *topology.Cluster) string {
			c.Auth = topology.Auth{Token: "garbage-" + randomHex()}
			return c.Auth.Token
		}, SpecTimeout(2*time.Minute)),
		Entry("a token file holding a wrong token", "Failed to authenticate", func(c *topology.Cluster) string {
			tok := testbed.SignToken([]byte("0123456789abcdef0123456789abcdef"), testbed.AdminRole)
			path := GinkgoT().TempDir() + "/wrong.token"
			Expect(os.WriteFile(path, []byte(tok+"\n"), 0o600)).To(Succeed())
			c.Auth = topology.Auth{TokenFile: path}
			return tok
		}, SpecTimeout(2*time.Minute)),
		Entry("no token at all", "Failed to authenticate", func(c *topology.Cluster) string {
			c.Auth = topology.Auth{}
			return ""
		}, SpecTimeout(2*time.Minute)),
		Entry("a plain pulsar:// URL on the TLS-only port", "unable to read frame size: EOF", func(c *topology.Cluster) string {
			c.ServiceURL = strings.Replace(c.ServiceURL, "pulsar+ssl://", "pulsar://", 1)
			c.TLS = topology.TLS{} // TLS material is only allowed with pulsar+ssl://
			return ""
		}, SpecTimeout(2*time.Minute)),
		Entry("no CA file (system roots do not know the bed's CA)", "certificate signed by unknown authority", func(c *topology.Cluster) string {
			c.TLS.CAFile = ""
			return ""
		}, SpecTimeout(2*time.Minute)),
		Entry("no client certificate (the brokers require one)", "tls: certificate required", func(c *topology.Cluster) string {
			c.TLS.CertFile, c.TLS.KeyFile = "", ""
			return ""
		}, SpecTimeout(2*time.Minute)),
	)

	It("take tokens from KEYROUTE_CLUSTER_<NAME>_TOKEN and never print them", func(ctx SpecContext) {
		topo := bed.Topology()
		env := map[string]string{}
		tokens := map[string]string{}
		for _, c := range topo.Clusters {
			tok, err := bed.Token("env-" + c.Name)
			Expect(err).NotTo(HaveOccurred())
			tokens[c.Name] = tok
			env[topology.EnvPrefix(c.Name)+topology.EnvToken] = tok
		}
		topo.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		Expect(topo.Validate()).To(Succeed())
		for _, c := range topo.Clusters {
			Expect(c.Auth.Token).To(Equal(tokens[c.Name]), c.Name)
			Expect(c.Auth.TokenFile).To(BeEmpty(), "the variable replaces the token file of %s", c.Name)
		}

		// Every way a topology gets printed or logged.
		var printed []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			printed = append(printed, fmt.Sprintf(verb, topo), fmt.Sprintf(verb, *topo), fmt.Sprintf(verb, topo.Clusters[0]))
		}
		printed = append(printed, fmt.Sprintf("%+v", topo.Redacted()))
		js, err := json.Marshal(topo)
		Expect(err).NotTo(HaveOccurred())
		printed = append(printed, string(js))
		y, err := yaml.Marshal(topo.Redacted())
		Expect(err).NotTo(HaveOccurred())
		printed = append(printed, string(y))
		var sl bytes.Buffer
		slog.New(slog.NewTextHandler(&sl, nil)).Info("topology", "topo", topo, "cluster", topo.Clusters[1])
		slog.New(slog.NewJSONHandler(&sl, nil)).Info("topology", "topo", topo, "auth", topo.Clusters[1].Auth)
		printed = append(printed, sl.String())
		for i, s := range printed {
			for name, tok := range tokens {
				Expect(s).NotTo(ContainSubstring(tok), "printed form %d shows the token of %s: %s", i, name, s)
			}
		}
		Expect(fmt.Sprintf("%+v", topo.Redacted())).To(ContainSubstring(topology.RedactedToken))
		Expect(topo.Clusters[0].Auth.Token).To(Equal(tokens[topo.Clusters[0].Name]), "Redacted copies, it does not modify")

		topic := newTopic(ctx, "env")
		var logs syncBuffer
		p, err := producer.New(ctx, topo, producer.Topic(topic), producer.Logger(debugLogger(&logs)))
		Expect(err).NotTo(HaveOccurred())
		// One key per cluster.
		keys := map[string]string{}
		for i := 0; len(keys) < clusters && i < 1000; i++ {
			k := "env-key-" + strconv.Itoa(i)
			if cl, _ := p.Placement(k); keys[cl] == "" {
				keys[cl] = k
			}
		}
		Expect(keys).To(HaveLen(clusters))
		for cl, k := range keys {
			id, err := p.Send(ctx, &producer.Message{Key: k, Value: []byte("via env")})
			Expect(err).NotTo(HaveOccurred(), cl)
			Expect(id.Cluster).To(Equal(cl))
		}
		Expect(p.Close(ctx)).To(Succeed())
		for _, tok := range tokens {
			Expect(logs.String()).NotTo(ContainSubstring(tok))
		}
	}, SpecTimeout(3*time.Minute))
	It("an Update adding a cluster whose token is refused names it, and the other cluster keeps working", addBadToken, SpecTimeout(3*time.Minute))

	It("serve again after a restart, with the same certificates and tokens", func(ctx SpecContext) {
		c := bed.Clusters()[0]
		url := c.ServiceURL
		start := time.Now()
		Expect(c.Kill()).To(Succeed())
		Expect(c.Restart(ctx)).To(Succeed())
		suite.Track(c.PID())
		GinkgoWriter.Printf("%s killed and ready again in %s\n", c.Name, time.Since(start).Round(time.Millisecond))
		Expect(c.ServiceURL).To(Equal(url))

		topo := bed.Topology()
		topic := newTopic(ctx, "restart")
		var p *producer.Producer
		err := standalone.Retry(ctx, func() (err error) {
			p, err = producer.New(ctx, topo, producer.Topic(topic))
			return err
		})
		Expect(err).NotTo(HaveOccurred())
		defer p.Close(ctx)
		for i := 0; ; i++ {
			k := "restart-" + strconv.Itoa(i)
			if cl, _ := p.Placement(k); cl != c.Name {
				continue
			}
			id, err := p.Send(ctx, &producer.Message{Key: k, Value: []byte("after restart")})
			Expect(err).NotTo(HaveOccurred())
			Expect(id.Cluster).To(Equal(c.Name))
			break
		}
	}, SpecTimeout(3*time.Minute))

})

// newTopic creates a partitioned topic with a unique name on every cluster
// through the https admin API with an admin token.
func newTopic(ctx context.Context, prefix string) string {
	local := "security-" + prefix + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	client := bed.HTTPClient()
	defer client.CloseIdleConnections()
	for _, c := range bed.Clusters() {
		url := c.AdminURL + "/admin/v2/persistent/public/default/" + local + "/partitions"
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, strings.NewReader(strconv.Itoa(partitions)))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		Expect(err).NotTo(HaveOccurred(), c.Name)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(resp.StatusCode/100).To(Equal(2), "%s: HTTP %d %s", c.Name, resp.StatusCode, body)
	}
	return "persistent://public/default/" + local
}

// consume reads n messages of topic from the cluster with a plain
// pulsar-client-go client built from the cluster's TLS and token settings.
func consume(ctx context.Context, c topology.Cluster, topic string, n int) ([]string, error) {
	opts, err := c.ClientOptions()
	if err != nil {
		return nil, err
	}
	opts.Logger = plog.DefaultNopLogger()
	client, err := pulsar.NewClient(opts)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	consumer, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic:                       topic,
		SubscriptionName:            "security",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	defer consumer.Close()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		m, err := consumer.Receive(rctx)
		if err != nil {
			return got, fmt.Errorf("receive after %d of %d: %w", len(got), n, err)
		}
		got = append(got, string(m.Payload()))
		if err := consumer.Ack(m); err != nil {
			return got, err
		}
	}
	return got, nil
}

// clusterErrors returns every *producer.ClusterError in err's tree.
func clusterErrors(err error) []*producer.ClusterError {
	var out []*producer.ClusterError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if ce, ok := e.(*producer.ClusterError); ok {
			out = append(out, ce)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// expectNoSecrets fails when s holds one of the bed's valid tokens.
func expectNoSecrets(s, what string) {
	GinkgoHelper()
	for _, role := range []string{testbed.AdminRole, testbed.ClientRole} {
		tok, err := bed.Token(role) // HS256 is deterministic: the same token
		Expect(err).NotTo(HaveOccurred())
		Expect(s).NotTo(ContainSubstring(tok), "%s shows the %s token", what, role)
	}
	b, err := os.ReadFile(bed.Topology().Clusters[0].Auth.TokenFile)
	Expect(err).NotTo(HaveOccurred())
	Expect(s).NotTo(ContainSubstring(strings.TrimSpace(string(b))), "%s shows the client token", what)
}

func debugLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// firstLines returns up to n distinct lines of s that contain one of subs,
// each cut to 300 bytes.
func firstLines(s string, n int, subs ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		if len(out) == n {
			break
		}
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				if i := strings.Index(l, "msg="); i >= 0 {
					l = l[i:]
				}
				if len(l) > 300 {
					l = l[:300]
				}
				if !seen[l] {
					seen[l] = true
					out = append(out, l)
				}
				break
			}
		}
	}
	return out
}
