package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/internal/ingest"
	"github.com/keyroute/keyroute/producer"
)

// fake is an in-memory Producer: keys hash onto two clusters; errFor
// decides each message's outcome.
type fake struct {
	mu      sync.Mutex
	got     []producer.Message
	closed  bool
	flushed bool
	errFor  func(key string) error
	down    string // a cluster the producer reports down
	wg      sync.WaitGroup
}

func (f *fake) Clusters() []string { return []string{"a", "b"} }

func (f *fake) Health() []producer.ClusterHealth {
	return []producer.ClusterHealth{{Name: "a", Up: f.down != "a"}, {Name: "b", Up: f.down != "b"}}
}

func (f *fake) Placement(key string) (string, int) {
	h := fnv.New32a()
	h.Write([]byte(key))
	return f.Clusters()[h.Sum32()%2], int(h.Sum32() % 3)
}

func (f *fake) outcome(msg *producer.Message) (producer.ID, error) {
	c, p := f.Placement(msg.Key)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return producer.ID{}, &producer.SendError{Key: msg.Key, Err: producer.ErrClosed}
	}
	if f.errFor != nil {
		if err := f.errFor(msg.Key); err != nil {
			return producer.ID{}, &producer.SendError{Key: msg.Key, Cluster: c, Partition: p, Cause: err}
		}
	}
	f.got = append(f.got, *msg)
	return producer.ID{Cluster: c, Partition: p}, nil
}

func (f *fake) Send(_ context.Context, msg *producer.Message) (producer.ID, error) {
	return f.outcome(msg)
}

func (f *fake) SendAsync(_ context.Context, msg *producer.Message, cb producer.Callback) {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		cb(producer.ID{}, msg, &producer.SendError{Key: msg.Key, Err: producer.ErrClosed})
		return
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		id, err := f.outcome(msg)
		cb(id, msg, err)
	}()
}

func (f *fake) Flush(context.Context) error {
	f.wg.Wait()
	f.mu.Lock()
	f.flushed = true
	f.mu.Unlock()
	return nil
}

func (f *fake) Close(ctx context.Context) error {
	f.wg.Wait()
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

func post(t *testing.T, h http.Handler, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/events", strings.NewReader(body)))
	return rec
}

func health(t *testing.T, h http.Handler) (int, ingest.Health) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var out ingest.Health
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	return rec.Code, out
}

func TestSyncAndAsync(t *testing.T) {
	f := &fake{}
	s := ingest.New(f, ingest.Options{})
	h := s.Handler()

	rec := post(t, h, `{"key":"k1","payload":"hello","sync":true}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var acc ingest.Accepted
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &acc))
	c, p := f.Placement("k1")
	assert.Equal(t, ingest.Accepted{ID: c + "/" + string(rune('0'+p)) + "/-", Cluster: c, Partition: p}, acc)

	rec = post(t, h, `{"key":"k2","payload":"AAEC/w==","encoding":"base64"}`)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	require.NoError(t, f.Flush(context.Background()))

	require.Len(t, f.got, 2)
	assert.Equal(t, []byte("hello"), f.got[0].Value)
	assert.Equal(t, []byte{0, 1, 2, 0xff}, f.got[1].Value)

	code, hl := health(t, h)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", hl.Status)
	require.Len(t, hl.Clusters, 2)
	var sent int64
	for _, ch := range hl.Clusters {
		sent += ch.Sent
		assert.Zero(t, ch.InFlight)
	}
	assert.Equal(t, int64(2), sent)
}

func TestBadRequests(t *testing.T) {
	h := ingest.New(&fake{}, ingest.Options{}).Handler()
	for body, want := range map[string]int{
		`{"payload":"x"}`:                                http.StatusBadRequest,
		`{"key":"k","payload":"x","extra":1}`:            http.StatusBadRequest,
		`{"key":"k","payload":"%%","encoding":"base64"}`: http.StatusBadRequest,
		`{"key":"k","payload":"x","encoding":"hex"}`:     http.StatusBadRequest,
		`{"key":"k"} {"key":"k"}`:                        http.StatusBadRequest,
		`not json`:                                       http.StatusBadRequest,
		`{"key":"k","payload":"` + strings.Repeat("x", ingest.MaxBodyBytes) + `"}`: http.StatusRequestEntityTooLarge,
	} {
		rec := post(t, h, body)
		assert.Equal(t, want, rec.Code, "%.60s: %s", body, rec.Body.String())
	}
}

func TestFailureDegradesCluster(t *testing.T) {
	f := &fake{errFor: func(key string) error {
		if key == "bad" {
			return errors.New("broker said no")
		}
		return nil
	}}
	h := ingest.New(f, ingest.Options{}).Handler()
	rec := post(t, h, `{"key":"bad","payload":"x","sync":true}`)
	assert.Equal(t, http.StatusBadGateway, rec.Code)

	code, hl := health(t, h)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "degraded", hl.Status)
	badCluster, _ := f.Placement("bad")
	for _, ch := range hl.Clusters {
		if ch.Name == badCluster {
			assert.Equal(t, "degraded", ch.State)
			assert.Contains(t, ch.LastError, "broker said no")
			assert.Equal(t, int64(1), ch.Failed)
		} else {
			assert.Equal(t, "ok", ch.State)
		}
	}

	// A later success on that cluster heals it.
	var good string
	for i := 0; ; i++ {
		good = "good-" + string(rune('a'+i))
		if c, _ := f.Placement(good); c == badCluster {
			break
		}
	}
	rec = post(t, h, `{"key":"`+good+`","payload":"x","sync":true}`)
	assert.Equal(t, http.StatusOK, rec.Code)
	code, _ = health(t, h)
	assert.Equal(t, http.StatusOK, code)
}

func TestClosedProducer(t *testing.T) {
	f := &fake{closed: true}
	h := ingest.New(f, ingest.Options{}).Handler()
	assert.Equal(t, http.StatusServiceUnavailable, post(t, h, `{"key":"k","payload":"x"}`).Code)
	assert.Equal(t, http.StatusServiceUnavailable, post(t, h, `{"key":"k","payload":"x","sync":true}`).Code)
}

// TestRunShutsDownGracefully: after ctx ends, Run answers no new
// connections, then flushes and closes the producer.
func TestRunShutsDownGracefully(t *testing.T) {
	f := &fake{}
	s := ingest.New(f, ingest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ingest.Run(ctx, ln, s, 5*time.Second) }()

	url := "http://" + ln.Addr().String()
	resp, err := http.Post(url+"/events", "application/json", strings.NewReader(`{"key":"k","payload":"x"}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	assert.True(t, f.flushed)
	assert.True(t, f.closed)
	assert.Len(t, f.got, 1)
	_, err = http.Post(url+"/events", "application/json", strings.NewReader(`{"key":"k","payload":"x"}`))
	assert.Error(t, err, "the listener is closed")
}

func TestHealthzIs503WhenTheProducerReportsAClusterDown(t *testing.T) {
	f := &fake{down: "b"}
	code, hl := health(t, ingest.New(f, ingest.Options{}).Handler())
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "degraded", hl.Status)
	require.Len(t, hl.Clusters, 2)
	assert.Equal(t, "ok", hl.Clusters[0].State)
	assert.Equal(t, "degraded", hl.Clusters[1].State)
	assert.Contains(t, hl.Clusters[1].Reason, "cluster down")
}
