package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

// readyTopic prefixes the topics that receive the produce and the
// transactional produce that prove a cluster is ready. Every probe uses a
// new topic: a restarted standalone can write to topics it already knows
// while it still fails to create ledgers for new ones ("Not enough
// non-faulty bookies available"), and tests create new topics right after
// a restart.
const readyTopic = "persistent://public/default/keyroute-testbed-ready"

// maxProbe bounds one readiness attempt; a broker still recovering its
// transaction buffer can hang a first transactional send for ~30 s.
const maxProbe = 40 * time.Second

// waitReady returns once a real produce and a real committed transaction
// succeed on c, retrying until ctx ends. It fails early with ErrExited when
// the JVM dies. Errors are *ClusterError with the log tail.
func (c *Cluster) waitReady(ctx context.Context) error {
	p := c.current()
	if p == nil {
		return c.errorf("ready", ErrNotRunning)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.brokerPort))
	var last error
	pause := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			select {
			case <-p.done:
				return c.errorf("ready", fmt.Errorf("%w: %v (last probe: %v)", ErrExited, p.err, last))
			case <-ctx.Done():
				return c.errorf("ready", fmt.Errorf("%w (last probe: %v)", ctx.Err(), last))
			case <-time.After(pause):
			}
			pause = min(pause*3/2, time.Second) // a booting JVM is CPU-bound: probe gently
		}
		if p.exited() {
			return c.errorf("ready", fmt.Errorf("%w: %v", ErrExited, p.err))
		}
		// A cheap TCP check first: no client churn while the JVM boots.
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			last = err
			continue
		}
		conn.Close()
		if last = probe(ctx, c.clientOptions()); last != nil {
			continue
		}
		if last = c.probeAdmin(ctx); last == nil {
			return nil
		}
	}
}

// clientOptions returns the options of a client that may use c: for a
// secure cluster, TLS with the client certificate and an AdminRole token.
func (c *Cluster) clientOptions() pulsar.ClientOptions {
	o := pulsar.ClientOptions{URL: c.ServiceURL}
	if c.sec != nil {
		o.TLSTrustCertsFilePath = c.sec.caFile
		o.TLSCertificateFile = c.sec.clientCertFile
		o.TLSKeyFilePath = c.sec.clientKeyFile
		o.TLSValidateHostname = true
		o.Authentication = pulsar.NewAuthenticationToken(c.sec.adminToken)
	}
	return o
}

// probeAdmin checks that a secure cluster's https admin API accepts the
// AdminRole token. Plain clusters need no check: their admin API answers
// long before a produce succeeds.
func (c *Cluster) probeAdmin(ctx context.Context) error {
	if c.sec == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.AdminURL+"/admin/v2/clusters", nil)
	if err != nil {
		return err
	}
	client := c.sec.httpClient()
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("admin: GET /admin/v2/clusters: HTTP %d", resp.StatusCode)
	}
	return nil
}

// probe produces one message and one message in a committed transaction
// with a client made from base (URL, TLS and authentication).
func probe(ctx context.Context, base pulsar.ClientOptions) error {
	timeout := maxProbe
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts := base
	opts.ConnectionTimeout = 3 * time.Second
	opts.OperationTimeout = min(timeout, 10*time.Second)
	opts.EnableTransaction = true
	opts.Logger = log.DefaultNopLogger()
	client, err := pulsar.NewClient(opts)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer client.Close()
	producer, err := client.CreateProducer(pulsar.ProducerOptions{
		Topic:           readyTopic + "-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		DisableBatching: true,
		SendTimeout:     timeout,
	})
	if err != nil {
		return fmt.Errorf("create producer: %w", err)
	}
	defer producer.Close()
	if _, err := producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("ready")}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	txn, err := client.NewTransaction(time.Minute)
	if err != nil {
		return fmt.Errorf("new transaction: %w", err)
	}
	if _, err := producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("ready-txn"), Transaction: txn}); err != nil {
		actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer acancel()
		return errors.Join(fmt.Errorf("transactional send: %w", err), txn.Abort(actx))
	}
	if err := txn.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
