// Command loadgen is keyroute's load generator: pulsar-perf across clusters.
// It produces keyed messages through the keyroute producer to every cluster
// of a topology and reports throughput and send-to-ack latency (HDR
// histograms, microsecond resolution), overall and per cluster, live every
// second and as a final table.
//
// Without -topology it starts five local Pulsar clusters with
// internal/testbed (downloading Pulsar on first use) and stops them at the
// end or on Ctrl-C:
//
//	go run ./examples/loadgen                      # 5 local clusters, 20 s after a 5 s warm-up
//	go run ./examples/loadgen -topology prod.yaml -rate 50000 -size 1024
//	go run ./examples/loadgen -mode sync -batching=false -json out.json -plot out.png
//	go run ./examples/loadgen -compare-raw         # SDK vs raw pulsar-client-go on one cluster
//
// Every message handed to the producer must get exactly one outcome; the run
// fails (exit 1) if acked + failed != sent. Exit 2 means bad flags, 130 an
// interrupted run (the results so far are still printed).
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
