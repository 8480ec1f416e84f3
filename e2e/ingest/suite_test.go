//go:build e2e

package ingest

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/ingest"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/plugin/kzap"
	"github.com/keyroute/keyroute/producer"
)

func TestIngest(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	reporterConfig.Verbose = true
	RunSpecs(t, "Ingest Suite", suiteConfig, reporterConfig)
}

const partitions = 4

var (
	bed       *testbed.Bed
	allPIDs   []int
	topic     string
	prod      *producer.Producer
	server    *ingest.Server
	baseURL   string
	stopServe context.CancelFunc
	served    chan error
	clients   map[string]pulsar.Client   // by cluster name
	consumers map[string]pulsar.Consumer // subscribed before any event is posted

	suiteT0, stepT0 time.Time
	stepName        string
)

// step prints the duration of the previous step and starts timing the next.
func step(name string) {
	now := time.Now()
	if stepName != "" {
		GinkgoWriter.Printf("step %-45s %8s\n", stepName, now.Sub(stepT0).Round(time.Millisecond))
	}
	stepName, stepT0 = name, now
}

var _ = BeforeSuite(func() {
	suiteT0 = time.Now()
	step("start 5 clusters")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var err error
	bed, err = testbed.Start(ctx, testbed.Options{Clusters: 5, Log: GinkgoWriter})
	// Never skip: a test bed that cannot start is a failure.
	Expect(err).NotTo(HaveOccurred(), "the test bed must start five clusters")
	Expect(bed.Clusters()).To(HaveLen(5))
	for _, c := range bed.Clusters() {
		allPIDs = append(allPIDs, c.PID())
	}
	DeferCleanup(func() {
		step("stop all clusters")
		Expect(bed.Stop()).To(Succeed())
		step("")
		for _, pid := range allPIDs {
			err := syscall.Kill(pid, 0)
			Expect(errors.Is(err, syscall.ESRCH)).To(BeTrue(), "JVM pid %d still exists (kill(pid, 0) = %v)", pid, err)
		}
		GinkgoWriter.Printf("suite total %s\n", time.Since(suiteT0).Round(time.Millisecond))
	})

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
