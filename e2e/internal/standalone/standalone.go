// Package standalone works around a behaviour of the Pulsar 4.0.8
// standalone that the e2e suites meet after they SIGKILL and restart a
// cluster: its in-process bookie keeps the same id (the suites need that
// to read data written before the kill), and its registration node then
// flips between created and deleted for minutes, so the broker fails to
// create ledgers with "Not enough non-faulty bookies available" several
// times a minute. Producers already connected ride it out (pulsar-client-go
// reconnects with backoff); a one-shot call made by a test (subscribe,
// create a producer) does not, so the suites retry those.
package standalone

import (
	"context"
	"strings"
	"time"
)

// flapping is the broker's error while the bookie registration flips.
const flapping = "Not enough non-faulty bookies available"

// Flapping reports whether err is the broker's error while the bookie
// registration flips.
func Flapping(err error) bool { return strings.Contains(err.Error(), flapping) }

// Retry calls fn until it returns nil or an error other than the bookie
// flapping error, or until ctx ends or two minutes pass; it returns fn's
// last error.
func Retry(ctx context.Context, fn func() error) error {
	return RetryWhile(ctx, fn, Flapping)
}

// RetryWhile is Retry with passing in place of Flapping, for a call that
// meets other errors than the broker's own while a cluster flaps: a
// producer already connected rides the flapping out, and the messages it
// holds meanwhile end at their send timeout.
func RetryWhile(ctx context.Context, fn func() error, passing func(error) bool) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := fn()
		if err == nil || !passing(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}
