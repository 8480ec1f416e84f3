//go:build e2e

package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/internal/ingest"
)

const (
	numKeys   = 200
	perKey    = 10
	numEvents = numKeys * perKey
	workers   = 20 // each posts the events of numKeys/workers keys, one key's events in order
)

func keyName(i int) string { return fmt.Sprintf("k-%03d", i) }

// placed is where the server said each key went, from its answers.
var placed = map[string]ingest.Accepted{}

var _ = Describe("the ingest service over five clusters", Ordered, func() {
	It("accepts 2,000 events over 200 keys, sync and async", func(ctx SpecContext) {
		step("post 2,000 events")
		var (
			mu     sync.Mutex
			wg     sync.WaitGroup
			errs   []error
			synced int
		)
		client := &http.Client{Timeout: time.Minute}
		for w := range workers {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for seq := range perKey {
					for k := w; k < numKeys; k += workers {
						key := keyName(k)
						isSync := (k+seq)%3 == 0
						body, _ := json.Marshal(ingest.Event{Key: key, Payload: key + ":" + strconv.Itoa(seq), Sync: isSync})
						acc, err := postEvent(ctx, client, body, isSync)
						mu.Lock()
						if err != nil {
							errs = append(errs, fmt.Errorf("%s seq %d: %w", key, seq, err))
						} else {
							if prev, ok := placed[key]; ok && (prev.Cluster != acc.Cluster || prev.Partition != acc.Partition) {
								errs = append(errs, fmt.Errorf("%s moved from %s/%d to %s/%d", key, prev.Cluster, prev.Partition, acc.Cluster, acc.Partition))
							}
							placed[key] = ingest.Accepted{Cluster: acc.Cluster, Partition: acc.Partition}
							if isSync {
								synced++
							}
						}
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		Expect(errs).To(BeEmpty())
		Expect(placed).To(HaveLen(numKeys))
		Expect(synced).To(BeNumerically(">", 500))
		Expect(synced).To(BeNumerically("<", 1500))
		perCluster := map[string]int{}
		for _, a := range placed {
			perCluster[a.Cluster]++
		}
		GinkgoWriter.Printf("keys per cluster: %v; %d sync events\n", perCluster, synced)
		Expect(perCluster).To(HaveLen(5), "200 keys reach all five clusters")
		step("")
	}, SpecTimeout(5*time.Minute))

	It("reports five healthy clusters on /healthz", func(ctx SpecContext) {
		step("healthz")
		var h ingest.Health
		Eventually(func(g Gomega) {
			code, body := get(ctx, baseURL+"/healthz")
			g.Expect(code).To(Equal(http.StatusOK), body)
			g.Expect(json.Unmarshal([]byte(body), &h)).To(Succeed())
			var sent int64
			for _, c := range h.Clusters {
				sent += c.Sent
			}
			g.Expect(sent).To(BeEquivalentTo(numEvents), "every async outcome has arrived")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second / 5).Should(Succeed()) // polling: how often to look, not a bound
		Expect(h.Status).To(Equal("ok"))
		Expect(h.Clusters).To(HaveLen(5))
		for i, c := range h.Clusters {
			Expect(c.Name).To(Equal(bed.Clusters()[i].Name))
			Expect(c.State).To(Equal("ok"), c.Name)
			Expect(c.LastSuccess).NotTo(BeNil(), c.Name)
			Expect(c.LastError).To(BeEmpty(), c.Name)
			Expect(c.InFlight).To(BeZero(), c.Name)
			Expect(c.Failed).To(BeZero(), c.Name)
		}
		step("")
	}, SpecTimeout(2*time.Minute))

	It("shuts down gracefully", func(ctx SpecContext) {
		step("graceful shutdown")
		stopServe()
		Eventually(served).WithContext(ctx).WithTimeout(time.Minute).Should(Receive(BeNil()))
		_, err := http.Post(baseURL+"/events", "application/json", strings.NewReader(`{"key":"late","payload":"x"}`))
		Expect(err).To(HaveOccurred(), "the server no longer accepts connections")
		Expect(prod.Flush(ctx)).NotTo(Succeed(), "the producer is closed")
		step("")
	}, SpecTimeout(2*time.Minute))

	It("delivered every event exactly once, in per-key order, where its key is placed", func(ctx SpecContext) {
		step("consume from five clusters")
		want := map[string]int{}
		for _, a := range placed {
			want[a.Cluster] += perKey
		}
		next := map[string]int{} // key -> next expected seq
		total := 0
		for _, c := range bed.Clusters() {
			consumer := consumers[c.Name]
			got := 0
			for got < want[c.Name] {
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				msg, err := consumer.Receive(rctx)
				cancel()
				Expect(err).NotTo(HaveOccurred(), "%s: received %d of %d", c.Name, got, want[c.Name])
				checkEvent(c.Name, msg, next)
				Expect(consumer.Ack(msg)).To(Succeed())
				got++
			}
			// Nothing more may arrive: no duplicates, no strays.
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			extra, err := consumer.Receive(rctx)
			cancel()
			Expect(err).To(MatchError(context.DeadlineExceeded), "%s: unexpected extra message %v", c.Name, extra)
			total += got
		}
		Expect(total).To(Equal(numEvents))
		for k := range numKeys {
			Expect(next[keyName(k)]).To(Equal(perKey), keyName(k))
		}
		step("")
	}, SpecTimeout(5*time.Minute))
})

// checkEvent checks one consumed message against the key's placement and
// the next sequence number expected for its key.
func checkEvent(cluster string, msg pulsar.Message, next map[string]int) {
	GinkgoHelper()
	key, seqStr, ok := strings.Cut(string(msg.Payload()), ":")
	Expect(ok).To(BeTrue(), "payload %q", msg.Payload())
	Expect(msg.Key()).To(Equal(key))
	seq, err := strconv.Atoi(seqStr)
	Expect(err).NotTo(HaveOccurred())
	Expect(seq).To(Equal(next[key]), "%s: events out of order or duplicated", key)
	next[key]++
	p := placed[key]
	Expect(cluster).To(Equal(p.Cluster), key)
	Expect(msg.Topic()).To(HaveSuffix("-partition-"+strconv.Itoa(p.Partition)), key)
}

func postEvent(ctx context.Context, client *http.Client, body []byte, sync bool) (ingest.Accepted, error) {
	var acc ingest.Accepted
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/events", bytes.NewReader(body))
	if err != nil {
		return acc, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return acc, err
	}
	defer resp.Body.Close()
	want := http.StatusAccepted
	if sync {
		want = http.StatusOK
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		return acc, fmt.Errorf("status %d, want %d: %s", resp.StatusCode, want, buf.String())
	}
	if err := json.Unmarshal(buf.Bytes(), &acc); err != nil {
		return acc, err
	}
	if sync && !strings.HasPrefix(acc.ID, acc.Cluster+"/"+strconv.Itoa(acc.Partition)+"/") {
		return acc, fmt.Errorf("id %q does not name %s/%d", acc.ID, acc.Cluster, acc.Partition)
	}
	return acc, nil
}

func get(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.String()
}
