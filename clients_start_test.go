package keyroute_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/topology"
)

// blackHole listens on a loopback port, accepts connections and never
// answers, as a stopped broker does (the kernel still completes the
// handshake). It closes at the end of the test.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	return "pulsar://" + ln.Addr().String()
}

// With transactions, making a client is a round trip to its cluster: one
// that gives no answer does not hold NewClients up, and is reported as
// not open (why included) until it answers.
func TestNewClientsStartsWithoutAClusterThatDoesNotAnswer(t *testing.T) {
	topo := &topology.Topology{Clusters: []topology.Cluster{{
		Name: "silent", ServiceURL: blackHole(t), Weight: 1,
		Client: topology.ClientSettings{OperationTimeout: time.Second, ConnectionTimeout: 500 * time.Millisecond},
	}}}
	// pulsar-client-go v0.21.0 waits for a broker's handshake until its
	// keep-alive gives up on the connection, whatever the timeouts: a
	// short keep-alive keeps the attempt (which Close waits for) short.
	short := keyroute.ConfigureClient(func(_ string, o *pulsar.ClientOptions) { o.KeepAliveInterval = 500 * time.Millisecond })
	cs, err := keyroute.NewClients(topo, keyroute.Transactions(true), keyroute.StartTimeout(50*time.Millisecond), short)
	require.NoError(t, err, "NewClients returns after StartTimeout, not after the operation timeout")
	_, err = cs.Client("silent")
	require.ErrorIs(t, err, keyroute.ErrNotOpen)
	assert.ErrorContains(t, err, `"silent"`)
	require.NoError(t, cs.Close(context.Background()), "Close waits for the attempt, which gives up")
	_, err = cs.Client("silent")
	require.ErrorIs(t, err, keyroute.ErrClosed)
}

func TestNewClientsBadStartTimeout(t *testing.T) {
	_, err := keyroute.NewClients(topo(1), keyroute.StartTimeout(0))
	require.ErrorIs(t, err, keyroute.ErrBadOption)
	assert.ErrorContains(t, err, "StartTimeout")
}
