package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long Stop waits after SIGTERM before it sends SIGKILL.
const stopGrace = 20 * time.Second

// logTailLines is how many log lines a ClusterError carries.
const logTailLines = 40

// Cluster is one local standalone Pulsar cluster: one JVM running a broker,
// an in-process bookie and a RocksDB metadata store, with its own data dir
// and ports. Its methods are safe for concurrent use.
type Cluster struct {
	// Name is the cluster's name, also its Pulsar clusterName.
	Name string
	// ServiceURL is the binary-protocol URL, pulsar://127.0.0.1:PORT
	// (pulsar+ssl://127.0.0.1:PORT for a secure bed).
	ServiceURL string
	// AdminURL is the HTTP admin URL, http://127.0.0.1:PORT
	// (https://127.0.0.1:PORT for a secure bed).
	AdminURL string

	java       string
	args       []string
	dataDir    string
	confPath   string
	logPath    string
	brokerPort int
	sec        *secrets // nil unless the bed is secure

	mu   sync.Mutex // guards proc; held across start and signal, not waits
	proc *process   // nil before the first start
}

// PID returns the process id of the cluster's JVM, or 0 when it is not
// running.
func (c *Cluster) PID() int {
	p := c.current()
	if p == nil || p.exited() {
		return 0
	}
	return p.pid
}

// Running reports whether the cluster's JVM is running (paused counts as
// running).
func (c *Cluster) Running() bool { return c.PID() != 0 }

// LogPath returns the file that receives the JVM's log and stdout/stderr.
func (c *Cluster) LogPath() string { return c.logPath }

// LogTail returns the last n lines of the cluster's log, oldest first.
func (c *Cluster) LogTail(n int) []string { return fileTail(c.logPath, n) }

// Stop stops the JVM with SIGTERM, sends SIGKILL if it has not exited after
// a grace period, and returns once it has exited. Stopping a stopped
// cluster does nothing. The data dir is kept for Restart.
func (c *Cluster) Stop() error { return c.stop(stopGrace) }

func (c *Cluster) stop(grace time.Duration) error {
	p := c.current()
	if p == nil || p.exited() {
		return nil
	}
	p.signal(syscall.SIGTERM)
	p.signal(syscall.SIGCONT) // a paused JVM cannot handle SIGTERM
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	p.signal(syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopGrace):
		return c.errorf("stop", fmt.Errorf("pid %d survived SIGKILL for %s", p.pid, stopGrace))
	}
}

// Kill kills the JVM with SIGKILL, as a crash would, and returns once it
// has exited. Killing a stopped cluster does nothing.
func (c *Cluster) Kill() error {
	p := c.current()
	if p == nil || p.exited() {
		return nil
	}
	p.signal(syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopGrace):
		return c.errorf("kill", fmt.Errorf("pid %d survived SIGKILL for %s", p.pid, stopGrace))
	}
}

// Pause freezes the JVM with SIGSTOP: connections stay open but nothing is
// answered, like a hung broker. It returns ErrNotRunning when the JVM is
// not running.
func (c *Cluster) Pause() error { return c.sendSignal("pause", syscall.SIGSTOP) }

// Resume continues a paused JVM with SIGCONT. It returns ErrNotRunning when
// the JVM is not running.
func (c *Cluster) Resume() error { return c.sendSignal("resume", syscall.SIGCONT) }

func (c *Cluster) sendSignal(op string, sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil || c.proc.exited() {
		return c.errorf(op, ErrNotRunning)
	}
	c.proc.signal(sig)
	return nil
}

// Restart stops the JVM if it runs (as Stop does), starts it again on the
// same data dir and ports, and waits until it is ready (a real produce and
// a real transaction succeed). ctx bounds the wait for readiness; when it
// ends first the JVM is left running and the error satisfies
// errors.Is(err, ctx.Err()).
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.Stop(); err != nil {
		return err
	}
	if err := c.start(); err != nil {
		return err
	}
	return c.waitReady(ctx)
}

func (c *Cluster) current() *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc
}

// start launches the JVM; it does not wait for readiness.
func (c *Cluster) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil && !c.proc.exited() {
		return c.errorf("start", ErrRunning)
	}
	logFile, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return c.errorf("start", err)
	}
	fmt.Fprintf(logFile, "### keyroute testbed: starting %s at %s\n", c.Name, time.Now().Format(time.RFC3339Nano))
	p, err := spawn(exec.Command(c.java, c.args...), logFile)
	if err != nil {
		logFile.Close()
		return c.errorf("start", err)
	}
	c.proc = p
	return nil
}

// errorf wraps err in a ClusterError carrying the log tail.
func (c *Cluster) errorf(op string, err error) error {
	return &ClusterError{Cluster: c.Name, Op: op, LogTail: c.LogTail(logTailLines), Err: err}
}

// newCluster prepares (but does not start) a cluster: its data dir, ports,
// config file and JVM command line.
func newCluster(s *setup, name string, ports portSet) (*Cluster, error) {
	dataDir, err := os.MkdirTemp(s.opts.DataDir, dataDirPrefix+name+"-")
	if err != nil {
		return nil, fmt.Errorf("testbed: cluster %s: data dir: %w", name, err)
	}
	reaper.addDir(dataDir)
	if err := markOwner(dataDir); err != nil {
		os.RemoveAll(dataDir)
		return nil, fmt.Errorf("testbed: cluster %s: data dir: %w", name, err)
	}
	c := &Cluster{
		Name:       name,
		java:       s.java,
		dataDir:    dataDir,
		confPath:   filepath.Join(dataDir, "standalone.conf"),
		logPath:    filepath.Join(dataDir, "pulsar.log"),
		brokerPort: ports.broker,
		sec:        s.sec,
	}
	if err := c.configure(s, ports); err != nil {
		c.removeData()
		return nil, err
	}
	return c, nil
}

// configure (re)writes the config for the given ports and sets the URLs and
// the command line.
func (c *Cluster) configure(s *setup, ports portSet) error {
	brokerPort, webPort := ports.broker, ports.web
	conf := renderConfig(s.baseConf, brokerConfig(c.Name, brokerPort, webPort, c.sec, s.opts.ExtraConfig))
	if err := os.WriteFile(c.confPath, conf, 0o644); err != nil {
		return fmt.Errorf("testbed: cluster %s: write config: %w", c.Name, err)
	}
	c.brokerPort = brokerPort
	c.ServiceURL = "pulsar://127.0.0.1:" + strconv.Itoa(brokerPort)
	c.AdminURL = "http://127.0.0.1:" + strconv.Itoa(webPort)
	if c.sec != nil {
		c.ServiceURL = "pulsar+ssl://127.0.0.1:" + strconv.Itoa(brokerPort)
		c.AdminURL = "https://127.0.0.1:" + strconv.Itoa(webPort)
	}
	c.args = jvmCommandLine(s.home, s.tuning, s.share, c.confPath, c.dataDir, ports.bookie)
	return nil
}

// removeData deletes the cluster's data dir. The JVM must have exited.
func (c *Cluster) removeData() error {
	reaper.removeDir(c.dataDir)
	if err := os.RemoveAll(c.dataDir); err != nil {
		return fmt.Errorf("testbed: cluster %s: remove data: %w", c.Name, err)
	}
	return nil
}
