// Command keyroute is the command line of a keyroute topology: the
// independent Pulsar clusters that keyroute's producer and consumer use as
// one topic. It is to a topology what pulsar-admin and pulsar-client are to
// one cluster.
//
// Install it with
//
//	go install github.com/keyroute/keyroute/cmd/keyroute@latest
//
// Every command reads the topology from -topology FILE (the YAML of package
// topology), with the SDK's environment overrides applied
// (KEYROUTE_CLUSTER_<NAME>_SERVICE_URL, _ADMIN_URL, _TOKEN, _TOKEN_FILE;
// see go doc github.com/keyroute/keyroute/topology), and reaches each
// cluster as the SDK does: the binary protocol through serviceURL, the
// admin REST API through adminURL, both with the cluster's TLS files and
// token (topology.Cluster.ClientOptions and AdminClient).
//
// # Commands
//
//	keyroute topics create   -topology F -partitions N|name=N,... TOPIC
//	keyroute topics describe -topology F TOPIC
//	keyroute topics delete   -topology F [-force] TOPIC
//	keyroute placement       -topology F -topic T | -partitions N|name=N,... KEY...
//	keyroute plan            -topology F -to NEW -topic T | -partitions N|name=N,... [-grow name=N,...] [-keys FILE]
//	keyroute health          -topology F TOPIC
//	keyroute produce         -topology F -topic T [-key K] [-key-separator SEP] [-property name=value]... [VALUE...]
//	keyroute consume         -topology F -topic T -subscription S [-type exclusive|failover|shared|key_shared] [-position latest|earliest] [-n N] [-wait D]
//
// topics create creates a partitioned topic on every cluster through its
// admin URL. -partitions is a count for every cluster ("3"), a count per
// cluster ("east=3,west=6"), or a default and exceptions ("3,west=6").
// A cluster where the topic exists with that count reports "exists"; with
// another count it fails. topics describe shows, per cluster, the
// partition count, producers, messages in, storage, and each subscription
// with its type, consumers and backlog. topics delete deletes the topic on
// every cluster; -force first disconnects its producers and consumers.
//
// placement prints the cluster and partition each KEY goes to, computed
// exactly as the producer routes (package router over the topology's
// cluster names and weights, then the partition among the topic's
// partitions on that cluster): with -topic the partition counts come from
// each cluster's admin API, with -partitions from the flag (no cluster is
// asked). The empty key has no place: the producer spreads keyless
// messages over every cluster and partition, and placement says so.
//
// plan shows what applying the topology NEW (producer.Update) would
// move, before anyone applies it; it changes nothing and connects to no
// broker. It refuses a NEW that Update refuses, with Update's error
// (connecting to the added clusters is left to Update). It prints the
// clusters to connect, drain, reweight and reconnect; the slots (of
// 65536) that change cluster, which Update's Change.SlotsMoved then
// reports, as slots and as a share of keys, per old and new cluster;
// for each cluster whose topic grows (-grow: its partition count after;
// Pulsar only grows a partitioned topic), the share of its keys that
// change partition, measured through the partition function over 64
// hashes per slot and stated with its tolerance (4 standard errors); the
// share of keys moved in all; and the most markers the change writes,
// one on each partition of every cluster that keys leave (a producer
// writes one only on a partition it has written to, HANDOVER.md 7.6).
// The partition counts come from the current clusters' admin APIs with
// -topic, or from -partitions. -keys FILE (one key per line) adds the
// exact count of those keys that move, in all and per row. Its -json
// object has the fields slots, slotsMoved, share, tolerance, moves (from,
// to, slots, share, keys), growth (cluster, partitionsBefore,
// partitionsAfter, share, tolerance, shareOfAll, keys), markers, connect,
// drain, reweight (cluster, from, to), reconnect (cluster, field, slots),
// and with -keys keys and keysMoved; shares are fractions of 1.
//
// health checks, for each cluster, the service URL (a lookup of the topic,
// as the consumer probes) and the admin URL (the topic's partitions, and
// the backlog of each subscription), and exits 1 unless every cluster is
// healthy. A cluster without an adminURL is checked through its service
// URL only.
//
// produce sends each VALUE argument, or without arguments each line of
// stdin, as one message with key -key (or, with -key-separator, the part
// of the line before the separator) and the -property properties, and
// prints the cluster, partition and message ID of each. consume subscribes
// on every cluster, prints each message as CLUSTER/PARTITION key=...
// value=... and its properties, and acknowledges it; it stops after -n
// messages, after -wait without one, or on Ctrl-C.
//
// # Common flags
//
//	-topology FILE  the topology (required)
//	-timeout D      bound of each cluster's calls: connecting, lookups,
//	                admin requests, each send and acknowledgement (default 30s)
//	-json           JSON instead of a table (produce and consume: one
//	                object per line)
//
// Flags come before the arguments. Every cluster is handled, in parallel,
// even when one fails; each failure is printed naming its cluster, e.g.
// "keyroute: cluster east-1: create topic: unexpected admin API status:
// HTTP 401: ...".
//
// # Exit codes
//
// 0 success; 1 a cluster failed, the topic is missing on one, or (health)
// a cluster is not healthy; 2 a bad command line or topology file.
package main
