//go:build e2e

package smoke

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/standalone"
	"github.com/keyroute/keyroute/internal/admin"
)

var _ = Describe("five local clusters", Ordered, func() {
	It("produce and consume on every cluster, on a plain and a partitioned topic", func(ctx SpecContext) {
		for _, c := range bed.Clusters() {
			step("produce+consume on " + c.Name)
			plain := uniqueTopic("plain")
			Expect(produceConsume(ctx, c.ServiceURL, plain, 10)).To(Succeed(), c.Name)

			partitioned := uniqueTopic("partitioned")
			Expect(admin.CreatePartitionedTopic(ctx, c.AdminURL, partitioned, 3)).To(Succeed(), c.Name)
			// Creating it again with the same count is fine.
			Expect(admin.CreatePartitionedTopic(ctx, c.AdminURL, partitioned, 3)).To(Succeed(), c.Name)
			Expect(produceConsume(ctx, c.ServiceURL, partitioned, 30)).To(Succeed(), c.Name)
			Expect(admin.DeleteTopic(ctx, c.AdminURL, partitioned)).To(Succeed(), c.Name)
		}
		step("")
	}, SpecTimeout(5*time.Minute))

	It("commits a transaction on every cluster and then delivers the message", func(ctx SpecContext) {
		for _, c := range bed.Clusters() {
			step("transaction on " + c.Name)
			Expect(commitThenConsume(ctx, c.ServiceURL, uniqueTopic("txn"))).To(Succeed(), c.Name)
		}
		step("")
	}, SpecTimeout(5*time.Minute))

	It("keeps serving on the other four clusters when one is killed", func(ctx SpecContext) {
		victim := bed.Clusters()[4]
		pid := victim.PID()
		step("kill " + victim.Name)
		Expect(victim.Kill()).To(Succeed())
		Expect(victim.PID()).To(BeZero())
		Expect(errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)).To(BeTrue(), "pid %d gone", pid)
		for _, c := range bed.Clusters()[:4] {
			step("produce+consume on " + c.Name + " after the kill")
			Expect(produceConsume(ctx, c.ServiceURL, uniqueTopic("survivor"), 10)).To(Succeed(), c.Name)
		}
		step("")
	}, SpecTimeout(5*time.Minute))

	It("restarts the killed cluster on the same ports and serves again", func(ctx SpecContext) {
		victim := bed.Clusters()[4]
		url := victim.ServiceURL
		step("restart " + victim.Name)
		Expect(victim.Restart(ctx)).To(Succeed())
		suite.Track(victim.PID())
		Expect(victim.ServiceURL).To(Equal(url))
		step("produce+consume on restarted " + victim.Name)
		topic := uniqueTopic("restarted")
		Expect(standalone.Retry(ctx, func() error { return produceConsume(ctx, victim.ServiceURL, topic, 10) })).To(Succeed())
		step("")
	}, SpecTimeout(5*time.Minute))

	It("stalls a paused cluster and serves again after resume", func(ctx SpecContext) {
		c := bed.Clusters()[3]
		client, err := bedsuite.Client(c.ServiceURL, false)
		Expect(err).NotTo(HaveOccurred())
		defer client.Close()
		producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: uniqueTopic("paused"), DisableBatching: true})
		Expect(err).NotTo(HaveOccurred())
		defer producer.Close()

		step("pause " + c.Name)
		Expect(c.Pause()).To(Succeed())
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = producer.Send(sctx, &pulsar.ProducerMessage{Payload: []byte("while paused")})
		cancel()
		Expect(err).To(HaveOccurred(), "a paused broker must not acknowledge")
		step("resume " + c.Name)
		Expect(c.Resume()).To(Succeed())
		_, err = producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("after resume")})
		Expect(err).NotTo(HaveOccurred())
		step("")
	}, SpecTimeout(5*time.Minute))
})

func uniqueTopic(prefix string) string {
	return "persistent://public/default/smoke-" + prefix + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// pipe is a client with a subscription ("smoke", from the earliest
// message) and a producer on one topic.
type pipe struct {
	client   pulsar.Client
	consumer pulsar.Consumer
	producer pulsar.Producer
}

// openPipe subscribes before it creates the producer, so the subscription
// sees every message sent. With txn, the client has transactions on and
// the producer does not batch (a transactional message is sent alone).
func openPipe(serviceURL, topic string, txn bool) (*pipe, error) {
	client, err := bedsuite.Client(serviceURL, txn)
	if err != nil {
		return nil, err
	}
	consumer, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic:                       topic,
		SubscriptionName:            "smoke",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
	})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("subscribe %s: %w", topic, err)
	}
	producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: txn})
	if err != nil {
		consumer.Close()
		client.Close()
		return nil, fmt.Errorf("producer %s: %w", topic, err)
	}
	return &pipe{client: client, consumer: consumer, producer: producer}, nil
}

func (pp *pipe) close() {
	pp.producer.Close()
	pp.consumer.Close()
	pp.client.Close()
}

// produceConsume subscribes, sends n messages and receives exactly them.
func produceConsume(ctx context.Context, serviceURL, topic string, n int) error {
	pp, err := openPipe(serviceURL, topic, false)
	if err != nil {
		return err
	}
	defer pp.close()
	producer, consumer := pp.producer, pp.consumer
	want := map[string]bool{}
	for i := range n {
		p := fmt.Sprintf("msg-%d", i)
		want[p] = true
		if _, err := producer.Send(ctx, &pulsar.ProducerMessage{Key: p, Payload: []byte(p)}); err != nil {
			return fmt.Errorf("send %s: %w", topic, err)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(want) > 0 {
		m, err := consumer.Receive(rctx)
		if err != nil {
			return fmt.Errorf("receive %s (%d missing): %w", topic, len(want), err)
		}
		if !want[string(m.Payload())] {
			return fmt.Errorf("unexpected or duplicate message %q on %s", m.Payload(), topic)
		}
		delete(want, string(m.Payload()))
		if err := consumer.Ack(m); err != nil {
			return err
		}
	}
	return nil
}

// commitThenConsume sends one message in a transaction, checks that it is
// invisible before the commit and delivered after it. How long it watches
// for a leak is measured first: a plain message's time from send to
// receive on the same pipe.
func commitThenConsume(ctx context.Context, serviceURL, topic string) error {
	pp, err := openPipe(serviceURL, topic, true)
	if err != nil {
		return err
	}
	defer pp.close()
	producer, consumer := pp.producer, pp.consumer
	delivery, err := deliveryTime(ctx, producer, consumer)
	if err != nil {
		return err
	}
	const txnTimeout = time.Minute
	txn, err := pp.client.NewTransaction(txnTimeout)
	if err != nil {
		return fmt.Errorf("new transaction: %w", err)
	}
	if _, err := producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("in-txn"), Transaction: txn}); err != nil {
		return fmt.Errorf("transactional send: %w", err)
	}
	// The uncommitted message must stay invisible for as long as a plain
	// message took to arrive, 20 times over: a leak would show within
	// about one delivery time. The window's end is a pass, so a slow
	// machine cannot make the check fail, it waits longer there; it is
	// kept to a quarter of the transaction's timeout, so that the commit
	// comes in time.
	window := min(20*delivery, txnTimeout/4)
	GinkgoWriter.Printf("  %s: a plain delivery took %s; watching %s for a leak\n", topic, delivery.Round(time.Millisecond), window.Round(time.Millisecond))
	early, cancel := context.WithTimeout(ctx, window)
	m, err := consumer.Receive(early)
	cancel()
	if err == nil {
		return fmt.Errorf("message %q visible before commit", m.Payload())
	}
	if err := txn.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	m, err = receiveOnly(ctx, consumer, "in-txn")
	if err != nil {
		return fmt.Errorf("committed message: %w", err)
	}
	return consumer.Ack(m)
}

// deliveryTime sends one plain message and returns how long it took from
// the send to its receipt, acknowledging it.
func deliveryTime(ctx context.Context, producer pulsar.Producer, consumer pulsar.Consumer) (time.Duration, error) {
	start := time.Now()
	if _, err := producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("plain")}); err != nil {
		return 0, fmt.Errorf("plain send: %w", err)
	}
	m, err := receiveOnly(ctx, consumer, "plain")
	if err != nil {
		return 0, fmt.Errorf("plain message: %w", err)
	}
	return time.Since(start), consumer.Ack(m)
}

// receiveOnly receives the next message, which must have payload want.
func receiveOnly(ctx context.Context, consumer pulsar.Consumer, want string) (pulsar.Message, error) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := consumer.Receive(rctx)
	if err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	if string(m.Payload()) != want {
		return nil, fmt.Errorf("got %q, want %q", m.Payload(), want)
	}
	return m, nil
}
