// Command clusters starts local Pulsar standalone clusters for trying the
// SDK by hand, prints their URLs, writes a topology file and stops them all
// on Ctrl-C or SIGTERM.
//
//	go run ./examples/clusters -n 5 -topology /tmp/keyroute.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/keyroute/keyroute/internal/testbed"
)

func main() {
	n := flag.Int("n", 5, "number of clusters")
	topo := flag.String("topology", "keyroute-topology.yaml", "path of the topology YAML file to write (empty: none)")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up if the clusters are not ready within this time (includes a first download)")
	flag.Parse()
	if err := run(*n, *topo, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "clusters:", err)
		os.Exit(1)
	}
}

func run(n int, topoPath string, timeout time.Duration) error {
	// Catch the signals before starting, so that Ctrl-C during startup
	// also goes through Stop. (The test bed kills its JVMs on its own too.)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()

	bed, err := testbed.Start(ctx, testbed.Options{Clusters: n})
	if err != nil {
		return err
	}
	defer bed.Stop()
	for _, c := range bed.Clusters() {
		fmt.Printf("%-10s %-28s %-28s pid %d log %s\n", c.Name, c.ServiceURL, c.AdminURL, c.PID(), c.LogPath())
	}
	if topoPath != "" {
		if err := bed.WriteTopology(topoPath); err != nil {
			return err
		}
		fmt.Printf("topology written to %s\n", topoPath)
	}
	fmt.Println("press Ctrl-C to stop")
	// Take SIGINT/SIGTERM over from the test bed, whose own handler would
	// SIGKILL the JVMs and exit, so that Stop can shut them down cleanly.
	// Pdeathsig still kills them if this process dies first.
	signal.Reset(os.Interrupt, syscall.SIGTERM)
	wait := make(chan os.Signal, 1)
	signal.Notify(wait, os.Interrupt, syscall.SIGTERM)
	<-wait
	return bed.Stop()
}
