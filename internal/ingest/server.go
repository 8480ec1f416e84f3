package ingest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/keyroute/keyroute/producer"
)

// MaxBodyBytes bounds the size of a POST /events request body.
const MaxBodyBytes = 1 << 20

// Producer is what the server needs of a *producer.Producer.
type Producer interface {
	Send(ctx context.Context, msg *producer.Message) (producer.ID, error)
	SendAsync(ctx context.Context, msg *producer.Message, cb producer.Callback)
	Placement(key string) (cluster string, partition int)
	Clusters() []string
	Health() []producer.ClusterHealth
	Flush(ctx context.Context) error
	Close(ctx context.Context) error
}

// Server serves POST /events and GET /healthz over a Producer. It does not
// own the Producer: Run (or the caller) flushes and closes it.
type Server struct {
	p      Producer
	log    *slog.Logger
	health *tracker
	mux    *http.ServeMux
}

// Options configure a Server. The zero value is usable.
type Options struct {
	// Log receives request failures; nil discards them.
	Log *slog.Logger
}

// New returns a Server for p.
func New(p Producer, opts Options) *Server {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{p: p, log: opts.Log, health: &tracker{now: time.Now}, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /events", s.postEvent)
	s.mux.HandleFunc("GET /healthz", s.getHealth)
	return s
}

// Handler returns the HTTP handler of the service.
func (s *Server) Handler() http.Handler { return s.mux }

// Health returns the current per-cluster health.
func (s *Server) Health() Health { return s.health.snapshot(s.p.Health()) }

// Event is the body of POST /events.
type Event struct {
	Key      string `json:"key"`
	Payload  string `json:"payload"`
	Encoding string `json:"encoding,omitempty"` // "" (UTF-8 text) or "base64"
	Sync     bool   `json:"sync,omitempty"`
}

// Accepted is the body of a 200 (sync, with ID) or 202 (async) answer.
type Accepted struct {
	ID        string `json:"id,omitempty"`
	Cluster   string `json:"cluster"`
	Partition int    `json:"partition"`
}

type errorBody struct {
	Error string `json:"error"`
}

func (s *Server) postEvent(w http.ResponseWriter, r *http.Request) {
	var ev Event
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		status := http.StatusBadRequest
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		writeJSON(w, status, errorBody{"bad event: " + err.Error()})
		return
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		writeJSON(w, http.StatusBadRequest, errorBody{"bad event: trailing data after the JSON object"})
		return
	}
	if ev.Key == "" {
		writeJSON(w, http.StatusBadRequest, errorBody{"bad event: key is required"})
		return
	}
	value := []byte(ev.Payload)
	switch ev.Encoding {
	case "":
	case "base64":
		b, err := base64.StdEncoding.DecodeString(ev.Payload)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody{"bad event: payload is not base64: " + err.Error()})
			return
		}
		value = b
	default:
		writeJSON(w, http.StatusBadRequest, errorBody{`bad event: encoding must be "" or "base64"`})
		return
	}
	msg := &producer.Message{Key: ev.Key, Value: value}
	cluster, partition := s.p.Placement(ev.Key)
	if ev.Sync {
		s.sendSync(w, r, msg, cluster)
		return
	}
	s.sendAsync(w, r, msg, cluster, partition)
}

func (s *Server) sendSync(w http.ResponseWriter, r *http.Request, msg *producer.Message, cluster string) {
	s.health.start(cluster)
	id, err := s.p.Send(r.Context(), msg)
	s.health.done(cluster, err)
	if err != nil {
		s.fail(w, msg.Key, err)
		return
	}
	writeJSON(w, http.StatusOK, Accepted{ID: id.String(), Cluster: id.Cluster, Partition: id.Partition})
}

// sendAsync answers 202 once the producer has accepted msg. A hand-over
// that fails calls back before SendAsync returns; that error is answered.
func (s *Server) sendAsync(w http.ResponseWriter, r *http.Request, msg *producer.Message, cluster string, partition int) {
	var (
		mu       sync.Mutex // guards returned and early
		returned bool
		early    error
	)
	s.health.start(cluster)
	s.p.SendAsync(r.Context(), msg, func(_ producer.ID, _ *producer.Message, err error) {
		s.health.done(cluster, err)
		if err != nil {
			s.log.Warn("async event failed", "cluster", cluster, "key", msg.Key, "err", err)
		}
		mu.Lock()
		if !returned {
			early = err
		}
		mu.Unlock()
	})
	mu.Lock()
	returned = true
	err := early
	mu.Unlock()
	if err != nil {
		s.fail(w, msg.Key, err)
		return
	}
	writeJSON(w, http.StatusAccepted, Accepted{Cluster: cluster, Partition: partition})
}

// fail answers a failed event with a status that says whose fault it was.
func (s *Server) fail(w http.ResponseWriter, key string, err error) {
	status := http.StatusBadGateway
	switch {
	case errors.Is(err, producer.ErrClosed):
		status = http.StatusServiceUnavailable
	case errors.Is(err, producer.ErrMessageTooLarge):
		status = http.StatusRequestEntityTooLarge
	case errors.Is(err, producer.ErrSendTimeout), errors.Is(err, context.DeadlineExceeded):
		status = http.StatusGatewayTimeout
	case errors.Is(err, context.Canceled):
		status = http.StatusServiceUnavailable // the client went away or we are stopping
	}
	s.log.Warn("event failed", "key", key, "status", status, "err", err)
	writeJSON(w, status, errorBody{err.Error()})
}

func (s *Server) getHealth(w http.ResponseWriter, _ *http.Request) {
	h := s.Health()
	status := http.StatusOK
	if h.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, h)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
