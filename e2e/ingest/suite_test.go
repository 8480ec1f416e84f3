//go:build e2e

package ingest

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/ingest"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/plugin/kzap"
	"github.com/keyroute/keyroute/producer"
)

func TestIngest(t *testing.T) { bedsuite.Run(t, "Ingest Suite") }

const partitions = 4

var (
	bed       *testbed.Bed
	suite     *bedsuite.Suite
	topic     string
	prod      *producer.Producer
	server    *ingest.Server
	baseURL   string
	stopServe context.CancelFunc
	served    chan error
	clients   map[string]pulsar.Client   // by cluster name
	consumers map[string]pulsar.Consumer // subscribed before any event is posted
)

func step(name string) { suite.Step(name) }

var _ = BeforeSuite(func() {
	suite = bedsuite.Start(testbed.Options{Clusters: 5})
	bed = suite.Bed
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	step("create topic, subscribe on every cluster")
	topic = "persistent://public/default/ingest-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	clients, consumers = map[string]pulsar.Client{}, map[string]pulsar.Consumer{}
	for _, c := range bed.Clusters() {
		Expect(admin.CreatePartitionedTopic(ctx, c.AdminURL, topic, partitions)).To(Succeed(), c.Name)
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, OperationTimeout: 30 * time.Second, Logger: log.DefaultNopLogger()})
		Expect(err).NotTo(HaveOccurred(), c.Name)
		clients[c.Name] = client
		// Subscribing before producing keeps every event in the backlog.
		consumer, err := client.Subscribe(pulsar.ConsumerOptions{
			Topic:                       topic,
			SubscriptionName:            "verify",
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
			ReceiverQueueSize:           1000,
		})
		Expect(err).NotTo(HaveOccurred(), c.Name)
		consumers[c.Name] = consumer
	}
	DeferCleanup(func() {
		for name, c := range consumers {
			c.Close()
			clients[name].Close()
		}
	})

	step("start the ingest server")
	obs, err := kotel.New()
	Expect(err).NotTo(HaveOccurred())
	z := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(GinkgoWriter), zap.WarnLevel))
	prod, err = producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.Observe(obs), kzap.Logger(z))
	Expect(err).NotTo(HaveOccurred())
	server = ingest.New(prod, ingest.Options{Log: kzap.Slog(z)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	baseURL = "http://" + ln.Addr().String()
	var serveCtx context.Context
	serveCtx, stopServe = context.WithCancel(context.Background())
	served = make(chan error, 1)
	go func() { served <- ingest.Run(serveCtx, ln, server, time.Minute) }()
	DeferCleanup(func() {
		// Specs shut down on their own; this only covers a failed spec.
		stopServe()
	})
	step("")
})
