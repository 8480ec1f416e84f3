// Command loadgen is keyroute's load generator: pulsar-perf across clusters,
// and an OpenMessaging Benchmark (OMB) runner. It produces keyed messages
// through the keyroute producer to every cluster of a topology and reports
// throughput and send-to-ack latency (HDR histograms, microsecond
// resolution), overall and per cluster, live every second and as a final
// table. With consumers (-subscriptions, or a workload's
// subscriptionsPerTopic) it reads the messages back through the keyroute
// consumer, acknowledging each, and reports end-to-end latency per cluster
// and that every acknowledged message reached every subscription.
//
// Without -topology it starts five local Pulsar clusters with
// internal/testbed (downloading Pulsar on first use) and stops them at the
// end or on Ctrl-C:
//
//	go run ./examples/loadgen                      # 5 local clusters, 20 s after a 5 s warm-up
//	go run ./examples/loadgen -topology prod.yaml -rate 50000 -size 1024
//	go run ./examples/loadgen -mode sync -batching=false -json out.json -plot out.png
//	go run ./examples/loadgen -compare-raw         # SDK vs raw pulsar-client-go on one cluster
//	go run ./examples/loadgen -subscriptions 1 -n 100000 -payload-file lines.txt -histogram-file run.hlog
//	go run ./examples/loadgen -workload examples/loadgen/workloads/1-topic-5-partitions-1kb-10k.yaml
//	go run ./examples/loadgen -topology secure.yaml -topic bench -partitions 6 -cleanup
//
// # Clusters of a topology
//
// With -topology the producers, consumers and admin calls reach each
// cluster as its topology entry says: the binary protocol with its TLS
// settings and token, and the admin API (which creates the -partitions
// topics, or the workload's) through its adminURL with the same CA,
// client certificate and token (topology.Cluster.AdminClient), so secured
// clusters need nothing more than their topology file. A cluster without an
// adminURL needs -partitions 0 and the topic created beforehand (e.g. with
// the keyroute command's topics create). -cleanup deletes, at the end of
// the run (also a failed or interrupted one), the topics loadgen created,
// on the clusters where it created them: a topic that was there before
// the run stays.
//
// See README.md next to this file for an OpenMessaging Benchmark workload
// walked through, from the workload file to OMB's charts.
//
// # OpenMessaging Benchmark workloads
//
// -workload FILE runs an OMB workload file (the fields of OMB's Workload
// class: topics, partitionsPerTopic, keyDistributor, messageSize,
// payloadFile or useRandomizedPayloads/randomBytesRatio/
// randomizedPayloadPoolSize, producersPerTopic, subscriptionsPerTopic,
// consumerPerSubscription, producerRate, testDurationMinutes,
// warmupDurationMinutes) and writes OMB's result JSON (-omb-json, by
// default <workload>-<driver>-<date>.json as OMB names it), which OMB's
// bin/create_charts.py plots beside OMB's own results. Where OMB would go
// on quietly loadgen stops with an error naming the field: an unknown
// field, an unknown keyDistributor, consumerBacklogSizeGB above 0 (loadgen
// does not build and drain a backlog). producerRate 0 means as fast as
// possible (OMB searches for the highest sustainable rate instead).
// Every workload topic is created afresh on every cluster as
// "<-topic>-0000000-<random>"; the producers of a topic are keyroute
// producers sharing one client per cluster with the consumers, one sender
// goroutine each; subscriptions are Failover (OMB's Pulsar default,
// -sub-type). The flags a workload file sets (-size, -rate, -partitions,
// -key-dist, -keys, -duration, -warmup, -senders, -subscriptions,
// -consumers, -payload-file, -mode, -txn-size, -compare-raw) conflict
// with it: given with -workload they are an error naming flag and field.
// The others (-topology, -batching, -linger, -compression, -json, -plot,
// -n, ...) apply. -omb-minute shortens the workload's minutes for tests
// (-omb-minute 6s runs testDurationMinutes: 2 in 12 s); OMB's 10 s
// reporting interval is a sixth of that minute, at least 1 s.
//
// # pulsar-perf parity
//
// -n stops after n messages (warm-up included; without -duration the run
// lasts until then, and without -warmup there is none), -payload-file takes
// payloads from a file, one per line, each message a random one, and
// -histogram-file writes an HdrHistogram interval log (one interval a
// second, nanoseconds, tags publish, e2e, publish.CLUSTER, e2e.CLUSTER) for
// HdrHistogram's log tools.
//
// End-to-end latency runs from the send time that loadgen writes into the
// first 8 bytes of every payload when it consumes (so payload files and
// randomized payloads lose their first 8 bytes), to the receive; payloads
// shorter than 8 bytes fall back to the broker's publish time (whole
// milliseconds, as OMB measures it). -plot draws throughput and latency
// per second (gonum.org/v1/plot), the warm-up shaded, the latency axis
// scaled to the measured window.
//
// Every message handed to the producer must get exactly one outcome, and
// with consumers every acknowledged message must be received by every
// subscription; the run fails (exit 1) otherwise. Exit 2 means bad flags
// or a bad workload file, 130 an interrupted run (the results so far are
// still printed).
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
