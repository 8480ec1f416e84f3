package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/keyroute/keyroute/topology"
)

// Options configure Start. The zero value starts five clusters.
type Options struct {
	// Clusters is how many independent clusters to start; 0 means 5.
	Clusters int
	// NamePrefix prefixes the cluster names, which are NamePrefix + "1",
	// NamePrefix + "2", ...; "" means "local-".
	NamePrefix string
	// Log receives progress messages; nil means os.Stderr.
	Log io.Writer
	// ExtraConfig holds broker settings (standalone.conf keys) applied to
	// every cluster on top of the test bed's own.
	ExtraConfig map[string]string
	// JVMArgs, when non-empty, replaces DefaultJVMArgs (heap, GC and JIT
	// flags), e.g. {"-XX:+UseG1GC", "-Xmx512m"} for benchmarks.
	JVMArgs []string
	// DataDir is the parent of the per-cluster data dirs; "" means
	// os.TempDir(). Data dirs are removed by Bed.Stop.
	DataDir string
	// Secure starts clusters that accept only TLS with a client
	// certificate and only token-authenticated clients. Start then
	// generates a throwaway CA, a broker certificate for 127.0.0.1, a
	// client certificate, an HS256 token key and tokens into a directory
	// that Bed.Stop removes. Service URLs are pulsar+ssl://, admin URLs
	// https://; the plain ports are disabled and readiness goes through
	// TLS and a token too. Bed.Topology carries the TLS files and a token
	// file; Bed.Token mints more tokens and Bed.HTTPClient calls the admin
	// API.
	Secure bool
}

// setup is what every cluster of one Start shares.
type setup struct {
	opts     Options
	w        io.Writer
	home     string
	java     string
	baseConf []byte
	tuning   []string // heap, GC and JIT flags
	share    []string // class-data-sharing flags
	sec      *secrets // nil unless opts.Secure
}

// Bed is a set of running local clusters. Its methods are safe for
// concurrent use.
type Bed struct {
	clusters []*Cluster
	w        io.Writer
	sec      *secrets // nil unless Options.Secure; removed by Stop

	mu      sync.Mutex // guards stopped
	stopped bool
}

// Start starts opts.Clusters independent standalone clusters and returns
// once every one of them has served a real produce and a real committed
// transaction. It first makes sure the distribution is installed (see
// EnsureDistribution). ctx bounds the whole start, including a first
// download; when it ends first the error satisfies errors.Is(err,
// ctx.Err()). On failure every JVM already started is stopped and the error
// names the failing cluster with its log tail (*ClusterError).
func Start(ctx context.Context, opts Options) (*Bed, error) {
	begin := time.Now()
	if opts.Clusters == 0 {
		opts.Clusters = 5
	}
	if opts.Clusters < 0 {
		return nil, fmt.Errorf("%w: Clusters %d", ErrBadOptions, opts.Clusters)
	}
	if opts.NamePrefix == "" {
		opts.NamePrefix = "local-"
	}
	s := &setup{opts: opts, w: opts.Log}
	if s.w == nil {
		s.w = os.Stderr
	}
	var err error
	if s.home, err = EnsureDistribution(ctx, s.w); err != nil {
		return nil, err
	}
	if s.java, err = findJava(); err != nil {
		return nil, err
	}
	if s.baseConf, err = os.ReadFile(filepath.Join(s.home, "conf", "standalone.conf")); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	s.tuning = DefaultJVMArgs()
	if len(opts.JVMArgs) > 0 {
		s.tuning = append([]string(nil), opts.JVMArgs...)
	}
	removeStaleDataDirs(opts.DataDir)
	b := &Bed{w: s.w}
	if opts.Secure {
		// Before prepareCDS: a training broker gets the same config.
		if s.sec, err = newSecrets(opts.DataDir); err != nil {
			return nil, err
		}
		b.sec = s.sec
	}
	s.share = s.prepareCDS(ctx)

	ports, err := clusterPorts(opts.Clusters)
	if err != nil {
		b.Stop()
		return nil, err
	}
	for i := range opts.Clusters {
		c, err := newCluster(s, opts.NamePrefix+strconv.Itoa(i+1), ports[i])
		if err != nil {
			b.Stop()
			return nil, err
		}
		b.clusters = append(b.clusters, c)
	}
	launch := time.Now()
	fmt.Fprintf(s.w, "testbed: starting %d clusters (class-data sharing %v, secure %v)\n",
		opts.Clusters, len(s.share) > 0, opts.Secure)
	errs := make([]error, len(b.clusters))
	var wg sync.WaitGroup
	for i, c := range b.clusters {
		wg.Go(func() {
			errs[i] = s.startCluster(ctx, c)
			if errs[i] == nil {
				fmt.Fprintf(s.w, "testbed: %s ready in %s: %s %s (pid %d)\n",
					c.Name, since(launch), c.ServiceURL, c.AdminURL, c.PID())
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Stop()
		return nil, err
	}
	fmt.Fprintf(s.w, "testbed: %d clusters ready in %s (%s since Start)\n",
		opts.Clusters, since(launch), since(begin))
	return b, nil
}

// startCluster starts c and waits until it is ready. A broker that lost a
// port to another process is retried on fresh ports.
func (s *setup) startCluster(ctx context.Context, c *Cluster) error {
	for try := 0; ; try++ {
		if err := c.start(); err != nil {
			return err
		}
		err := c.waitReady(ctx)
		if err == nil {
			return nil
		}
		bind := bindFailure(c.LogTail(400))
		if try >= 2 || !errors.Is(err, ErrExited) || bind == "" {
			c.Kill()
			return err
		}
		ports, perr := clusterPorts(1)
		if perr != nil {
			return errors.Join(err, perr)
		}
		fmt.Fprintf(s.w, "testbed: %s lost a port (%s), retrying on %v\n", c.Name, strings.TrimSpace(bind), ports)
		if cerr := c.configure(s, ports[0]); cerr != nil {
			return errors.Join(err, cerr)
		}
	}
}

// bindFailure returns the first log line that reports a failed bind, or "".
func bindFailure(lines []string) string {
	for _, l := range lines {
		if strings.Contains(l, "Address already in use") || strings.Contains(l, "BindException") {
			return l
		}
	}
	return ""
}

// Clusters returns the clusters in name order (local-1 first).
func (b *Bed) Clusters() []*Cluster {
	return append([]*Cluster(nil), b.clusters...)
}

// Cluster returns the cluster with the given name, or nil.
func (b *Bed) Cluster(name string) *Cluster {
	for _, c := range b.clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Topology returns the clusters as a topology with weight 1 each. For a
// secure bed every cluster also gets the CA and the client certificate
// (TLS) and a file holding a ClientRole token (Auth.TokenFile); host names
// are checked (the broker certificate names 127.0.0.1).
func (b *Bed) Topology() *topology.Topology {
	t := &topology.Topology{Clusters: make([]topology.Cluster, 0, len(b.clusters))}
	for _, c := range b.clusters {
		tc := topology.Cluster{
			Name:       c.Name,
			ServiceURL: c.ServiceURL,
			AdminURL:   c.AdminURL,
			Weight:     1,
		}
		if b.sec != nil {
			tc.TLS = topology.TLS{CAFile: b.sec.caFile, CertFile: b.sec.clientCertFile, KeyFile: b.sec.clientKeyFile}
			tc.Auth = topology.Auth{TokenFile: b.sec.clientTokenFile}
		}
		t.Clusters = append(t.Clusters, tc)
	}
	return t
}

// Secure reports whether the bed was started with Options.Secure.
func (b *Bed) Secure() bool { return b.sec != nil }

// HTTPClient returns a client for the clusters' admin URLs. For a secure
// bed it trusts the bed's CA, presents the client certificate and sends an
// AdminRole token with every request; otherwise it is a plain client.
func (b *Bed) HTTPClient() *http.Client {
	if b.sec == nil {
		return &http.Client{Timeout: time.Minute}
	}
	return b.sec.httpClient()
}

// WriteTopology writes Topology() as a YAML topology file to path.
func (b *Bed) WriteTopology(path string) error {
	return b.Topology().WriteFile(path)
}

// Stop stops every cluster (SIGTERM, then SIGKILL after a grace period),
// waits for every JVM to exit and removes the data dirs. Calling it again
// does nothing.
func (b *Bed) Stop() error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	b.mu.Unlock()
	start := time.Now()
	errs := make([]error, len(b.clusters))
	var wg sync.WaitGroup
	for i, c := range b.clusters {
		wg.Go(func() {
			if err := c.Stop(); err != nil {
				errs[i] = err
				return
			}
			errs[i] = c.removeData()
		})
	}
	wg.Wait()
	if len(b.clusters) > 0 {
		fmt.Fprintf(b.w, "testbed: %d clusters stopped in %s\n", len(b.clusters), since(start))
	}
	if b.sec != nil {
		// Only once every JVM is gone: a running broker reads its files.
		errs = append(errs, b.sec.remove())
	}
	return errors.Join(errs...)
}
