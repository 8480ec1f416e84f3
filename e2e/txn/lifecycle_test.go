//go:build e2e

package txn

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/keyroute/keyroute/e2e/internal/standalone"
	"github.com/keyroute/keyroute/producer"
)

// upstreamLingering are pulsar-client-go v0.21.0 goroutines that outlive a
// transactional client's Close, named so that nothing else hides behind
// them:
//   - the transaction coordinator client's event loop and its connection
//     grabber: client.Close never closes the coordinator client
//     (client_impl.go Close closes handlers, the connection pool and the
//     lookup service only), so they run for the life of the process;
//   - a transaction's timeout timer (newTransaction.func1), which ends at
//     the transaction's timeout;
//   - the coordinator's connection (connection.run, its runPingCheck and
//     its reader):
//     the connection pool, though closed, still opens new connections, and
//     the coordinator client that reconnected is never closed. The spec
//     prints how many connections it left.
var upstreamLingering = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar/internal.(*connection).run"),
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar/internal.(*connection).runPingCheck"),
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar/internal.(*connectionReader).readFromConnection"),
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar.(*transactionHandler).runEventsLoop"),
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar.(*transactionHandler).grabConn.func1"),
	goleak.IgnoreAnyFunction("github.com/apache/pulsar-client-go/pulsar.newTransaction.func1"),
}

var _ = Describe("lifecycle", func() {
	It("leaves no goroutine of the producer's, nor any but named upstream ones, after Close", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 3*time.Minute)
		defer cancel()
		topic := uniqueTopic("lifecycle")
		Expect(createTopic(ctx, bed, topic)).To(Succeed())
		before := goleak.IgnoreCurrent()
		n0, conns0 := runtime.NumGoroutine(), connections()

		const sendTimeout, txnTimeout = 3 * time.Second, 10 * time.Second
		// Specs run in any order: a cluster killed and restarted by another
		// spec may still flap (see e2e/internal/standalone), so each
		// one-shot call retries that. The producer rides the flapping
		// out, holding its messages until sendTimeout: a send timeout is
		// retried too (CI, 2026-11-26: this spec right after the kill
		// spec, the restarted cluster's sends timed out in RunInTxn).
		flapping := func(err error) bool {
			return standalone.Flapping(err) || errors.Is(err, producer.ErrSendTimeout)
		}
		var p *producer.Producer
		Expect(standalone.Retry(ctx, func() (err error) {
			p, err = newProducer(ctx, bed, topic, producer.SendTimeout(sendTimeout))
			return err
		})).To(Succeed())
		keys := make([]string, 50)
		for i := range keys {
			keys[i] = fmt.Sprintf("life-%d", i)
		}
		Expect(standalone.RetryWhile(ctx, func() error {
			return p.RunInTxn(ctx, func(_ context.Context, tx *producer.Txn) error {
				for _, k := range keys {
					if err := tx.Send(&producer.Message{Key: k, Value: []byte(k)}); err != nil {
						return err
					}
				}
				return nil
			}, producer.TxnTimeout(txnTimeout))
		}, flapping)).To(Succeed())
		msgs := make([]*producer.Message, 200)
		for i := range msgs {
			msgs[i] = &producer.Message{Key: keys[i%len(keys)], Value: []byte("bulk")}
		}
		Expect(standalone.RetryWhile(ctx, func() error {
			_, err := p.SendTxnBulk(ctx, msgs, 50, producer.TxnTimeout(txnTimeout))
			return err
		}, flapping)).To(Succeed())
		for _, k := range keys {
			Expect(standalone.RetryWhile(ctx, func() error {
				_, err := p.Send(ctx, &producer.Message{Key: k, Value: []byte("plain")})
				return err
			}, flapping)).To(Succeed())
		}
		Expect(p.Close(ctx)).To(Succeed())

		// pulsar-client-go's failTimeoutMessages goroutine of each
		// partition producer ends at its next tick after Close, at most
		// SendTimeout later (producer_partition.go); the transactions'
		// timers end at their TxnTimeout. Wait for both, derived from the
		// settings, then nothing but the named upstream goroutines may
		// remain.
		var leak error
		Eventually(func() error {
			leak = goleak.Find(append([]goleak.Option{before}, upstreamLingering...)...)
			return leak
		}).WithTimeout(txnTimeout + 2*sendTimeout).
			WithPolling(sendTimeout / 10).
			Should(Succeed())
		Expect(leak).NotTo(HaveOccurred())
		// No bound on the connections left: transactional clients of other
		// specs in this process reconnect their coordinators at any time
		// (a killed cluster's restart), so a count is not this spec's own.
		GinkgoWriter.Printf("goroutines: %d before New, %d after Close; pulsar-client-go connections %d before, %d after (the differences are the named upstream ones)\n",
			n0, runtime.NumGoroutine(), conns0, connections())
	})
})

// connections counts the pulsar-client-go connections still running: the
// goroutines whose top frame is a connection's run loop.
func connections() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.SplitN(g, "\n", 3)
		if len(lines) > 1 && strings.HasPrefix(lines[1], "github.com/apache/pulsar-client-go/pulsar/internal.(*connection).run(") {
			n++
		}
	}
	return n
}
