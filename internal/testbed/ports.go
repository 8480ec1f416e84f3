package testbed

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports are picked below the kernel's ephemeral range when possible. A
// port the kernel handed out for 127.0.0.1:0 is an ephemeral port, and the
// same range serves every outgoing connection's source port and the
// bookie's own port-0 pick, so a broker starting a few seconds later could
// find it taken (seen here: one cluster in five lost its port once).
const (
	lowPortMin      = 15000
	ephemeralDefLow = 32768
)

// portSet is the ports of one cluster.
type portSet struct {
	broker int // binary protocol (TLS in secure mode)
	web    int // admin API (https in secure mode)
	// bookie is the in-process bookie's port. A fixed port keeps the
	// bookie's id (host:port) across restarts; with a new random port the
	// restarted broker could still see the dead bookie's registration and
	// fail new ledgers with "Not enough non-faulty bookies" for a while.
	bookie int
}

// clusterPorts returns n port sets whose ports are all distinct.
func clusterPorts(n int) ([]portSet, error) {
	ports, err := freePorts(3 * n)
	if err != nil {
		return nil, err
	}
	sets := make([]portSet, n)
	for i := range sets {
		sets[i] = portSet{broker: ports[3*i], web: ports[3*i+1], bookie: ports[3*i+2]}
	}
	return sets, nil
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. All listeners stay open until every port is picked, so no
// port is returned twice. Another process may still take a port before
// the broker binds it; Start retries a cluster that fails to bind.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	lo, hi := lowPortMin, ephemeralLow()
	for tries := 0; len(ports) < n && hi-lo >= 1000 && tries < 100*n; tries++ {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(lo+rand.IntN(hi-lo))))
		if err != nil {
			continue // taken
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for len(ports) < n { // fallback: let the kernel pick
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testbed: pick a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralLow returns the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return ephemeralDefLow
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return ephemeralDefLow
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return ephemeralDefLow
	}
	return lo
}
