package producer_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

func TestSlowCallbackDoesNotStallOtherClusters(t *testing.T) {
	p := newProducer(t, newFake(1), 5)
	blocked := "k-blocked"
	slowCluster, _ := p.Placement(blocked)
	release := make(chan struct{})
	var slowDone sync.WaitGroup
	slowDone.Add(1)
	// The fake acks inline, on the sending goroutine, as pulsar-client-go's
	// reader goroutine would: a blocking callback there would block SendAsync.
	p.SendAsync(context.Background(), &producer.Message{Key: blocked}, func(producer.ID, *producer.Message, error) {
		<-release
		slowDone.Done()
	})
	var fast atomic.Int64
	var wg sync.WaitGroup
	sent := 0
	for i := 0; sent < 1000; i++ {
		key := fmt.Sprint("other-", i)
		if c, _ := p.Placement(key); c == slowCluster {
			continue
		}
		sent++
		wg.Add(1)
		p.SendAsync(context.Background(), &producer.Message{Key: key}, func(_ producer.ID, _ *producer.Message, err error) {
			assert.NoError(t, err)
			fast.Add(1)
			wg.Done()
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1000, fast.Load())
	close(release)
	slowDone.Wait()
}

func TestDeadClusterDoesNotBlockHealthyOnes(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c3").Hold() // never acks unless told
	p := newProducer(t, fake, 5, producer.MaxPendingMessages(50))
	// Fill c3's share (10 messages) and more: the extra sends must wait and
	// then give up when their ctx ends.
	var deadKeys, liveKeys []string
	for i := 0; len(deadKeys) < 15 || len(liveKeys) < 500; i++ {
		key := fmt.Sprint("k", i)
		if c, _ := p.Placement(key); c == "c3" {
			deadKeys = append(deadKeys, key)
		} else {
			liveKeys = append(liveKeys, key)
		}
	}
	stuck := make(chan error, 15)
	handed := make(chan struct{})
	go func() {
		defer close(handed)
		for _, k := range deadKeys[:15] {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			p.SendAsync(ctx, &producer.Message{Key: k}, func(_ producer.ID, _ *producer.Message, err error) {
				if err != nil {
					stuck <- err
				}
			})
			cancel()
		}
	}()
	var wg sync.WaitGroup
	for _, k := range liveKeys[:500] {
		wg.Add(1)
		p.SendAsync(context.Background(), &producer.Message{Key: k}, func(_ producer.ID, _ *producer.Message, err error) {
			assert.NoError(t, err)
			wg.Done()
		})
	}
	wg.Wait() // healthy clusters finished while c3 is stuck
	require.Eventually(t, func() bool { msgs, _ := p.Held(); return msgs[2] == 10 }, 5*time.Second, time.Millisecond,
		"c3 holds exactly its share")
	<-handed
	select {
	case err := <-stuck:
		t.Fatalf("a send that gave up was reported before the earlier messages of its partition: %v", err)
	default:
	}
	// The sends that gave up are reported after the earlier messages of
	// their key (of c3's only partition): once those are acknowledged.
	fake.Cluster("c3").Partition(0).Ack()
	for i := 0; i < 5; i++ {
		err := <-stuck
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, producer.NotWritten(err), "gave up before the writer had it: %v", err)
		var se *producer.SendError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "c3", se.Cluster)
	}
}
