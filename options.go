package keyroute

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// DefaultMemoryLimit is each client's pulsar-client-go memory limit when
// MemoryLimit is not given.
const DefaultMemoryLimit = 256 << 20

// cfg is the validated configuration of a Clients.
type cfg struct {
	transactions bool
	memoryLimit  int64
	logger       *slog.Logger
	configure    func(cluster string, o *pulsar.ClientOptions)
	startTimeout time.Duration
}

func (c *cfg) validate() error {
	if c.memoryLimit < 1 {
		return fmt.Errorf("%w: MemoryLimit(%d): must be >= 1", ErrBadOption, c.memoryLimit)
	}
	if c.startTimeout <= 0 {
		return fmt.Errorf("%w: StartTimeout(%s): must be > 0", ErrBadOption, c.startTimeout)
	}
	return nil
}

// Opt configures a Clients.
type Opt interface{ apply(*cfg) }

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

// Transactions turns Pulsar transactions on in every client (default
// off); a producer with transactions needs it.
func Transactions(on bool) Opt { return optFunc(func(c *cfg) { c.transactions = on }) }

// MemoryLimit sets each client's pulsar-client-go memory limit
// (ClientOptions.MemoryLimitBytes), shared by every producer of that
// cluster (default DefaultMemoryLimit). The producers' own MemoryLimit
// options bound their buffers on top of it.
func MemoryLimit(bytes int64) Opt { return optFunc(func(c *cfg) { c.memoryLimit = bytes }) }

// Logger routes every client's pulsar-client-go logs to l, with a
// "cluster" attribute (default: nothing is logged). The producers' and
// consumers' own logs go where their own Logger options say.
func Logger(l *slog.Logger) Opt { return optFunc(func(c *cfg) { c.logger = l }) }

// ConfigureClient lets fn adjust each cluster's pulsar-client-go client
// options after keyroute has filled them in from the topology.
func ConfigureClient(fn func(cluster string, o *pulsar.ClientOptions)) Opt {
	return optFunc(func(c *cfg) { c.configure = fn })
}

// StartTimeout bounds how long NewClients waits for each cluster's client
// (default DefaultStartTimeout); it matters only with Transactions(true),
// where making a client is a round trip to the cluster. See NewClients.
func StartTimeout(d time.Duration) Opt { return optFunc(func(c *cfg) { c.startTimeout = d }) }
