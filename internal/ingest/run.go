package ingest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// DefaultShutdownTimeout bounds a graceful shutdown in Run.
const DefaultShutdownTimeout = 30 * time.Second

// Run serves s on ln until ctx ends, then shuts down gracefully: it stops
// accepting connections and waits for requests in progress, then flushes
// the producer (every accepted event gets its outcome) and closes it. The
// whole shutdown is bounded by shutdownTimeout (0 means
// DefaultShutdownTimeout). Run closes ln. It returns nil after a clean
// shutdown.
func Run(ctx context.Context, ln net.Listener, s *Server, shutdownTimeout time.Duration) error {
	if shutdownTimeout <= 0 {
		shutdownTimeout = DefaultShutdownTimeout
	}
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()

	var errs []error
	served := false
	select {
	case err := <-serveErr:
		served = true
		errs = append(errs, fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
	}
	s.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("http shutdown: %w", err))
	}
	if !served {
		if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("serve: %w", err))
		}
	}
	if err := s.p.Flush(sctx); err != nil {
		errs = append(errs, fmt.Errorf("flush: %w", err))
	}
	if err := s.p.Close(sctx); err != nil {
		errs = append(errs, fmt.Errorf("close: %w", err))
	}
	return errors.Join(errs...)
}
