package consumer

import (
	"context"
	"errors"
	"sync"
	"time"
)

// SeekByTime moves the subscription on every cluster, in parallel, to the
// first message published at or after t: messages after it come again,
// earlier ones are skipped. Messages read before the seek and not yet
// taken are dropped, so the next message of a cluster taken after
// SeekByTime returns is one of the new position. ctx bounds the waiting
// to pause the clusters' streams; pulsar-client-go's seek itself is
// bounded by each cluster's operation timeout. Errors name each cluster
// that failed (*ClusterError, joined); the others have moved.
func (c *Consumer) SeekByTime(ctx context.Context, t time.Time) error {
	if c == nil || c.closed.Load() {
		return ErrClosed
	}
	c.seekMu.Lock()
	defer c.seekMu.Unlock()
	errs := make([]error, len(c.clusters))
	var wg sync.WaitGroup
	for i, k := range c.clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.seek(ctx, k, t)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Consumer) seek(ctx context.Context, k *cluster, t time.Time) error {
	resume := make(chan struct{})
	defer close(resume)
	select {
	case k.pause <- resume:
	case <-c.closing:
		return clusterErr(k.name, "seek", ErrClosed)
	case <-ctx.Done():
		return clusterErr(k.name, "seek", ctx.Err())
	}
	return clusterErr(k.name, "seek", k.link.stream.SeekByTime(t))
}
