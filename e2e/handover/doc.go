// Package handover is the e2e suite of the hand-over of moving keys
// (router/HANDOVER.md), on real local Pulsar clusters.
//
// With the SPEC alone (spec_test.go, three clusters): two producer
// instances written by HANDOVER.md section 5 on plain pulsar-client-go
// producers write every key, write a marker on each partition that keys
// leave, and write the moved keys' later messages on their new owner,
// tagged with the marker's position, right after the marker's
// acknowledgement while the earlier messages are still unread. The SPEC
// reader (e2e/internal/specreader, plain pulsar-client-go consumers)
// reads the new owner first and the old owners after, on an Exclusive and
// on a Failover subscription: it delivers every
// key of every producer in order, none lost or twice, and releases no
// hold by force, while a naive merge of the same receipts reorders every
// moved key. Closed while it holds them, a reader's successor on the same
// subscription gets them again and delivers them in order. A spec grows one cluster's partitions between the
// writes, read live (the new partitions found by discovery) and by a
// second reader subscribed after the writes.
//
// Under steady load with producer.Update (live_test.go, six clusters): 5 -> 6
// clusters, 6 -> 5 (a drain), a reweight, partitions 5 -> 8 on one
// cluster, and two changes back to back, each with 5,000 msg/s over
// 10,000 keys, read back by the keyroute consumer and by the SPEC reader
// while the load runs, and by a second SPEC reader subscribed after it:
// no loss, no duplicate, no reorder per key and producer; the moved
// keys' fraction within 0.01 of what the weights give; every message read
// on its key's owner before or after the change, each moved key on its
// new one; at the growth, every key of the grown cluster on the partition
// router gives, at most 40% of them moved (3/8 is the least possible) and
// none of the other clusters' keys, both fractions printed; the unmoved keys'
// acknowledged share of what the sender offered them, from the change on,
// at least 0.95 of that share before it in the same run (a cluster
// outside the starting topology carries a like share on a topic of its
// own until the change, so that it is warm; the raw rates and the time
// the sender spent inside SendAsync are printed with it); the moved keys'
// extra latency (p50, p99, max) is printed. Each change prints one line
// of figures (FIGURES): the moved keys' fraction, the producer's and the
// consumer's time to apply it, the keyroute consumer's end-to-end p99 of
// the unmoved keys before and after the change (on the changed cluster
// and elsewhere) and of the moved keys, and its duplicates.
//
// A reader that lags (backlog_test.go, six clusters): a backlog written at
// 2,500 msg/s over 10,000 keys through an add, a drain, a reweight and a
// growth, and a plain one of the same size beside it, are read from
// Earliest by keyroute consumers with the default hold options, on
// Exclusive, Failover and KeyShared: every acknowledged message once, no
// reorder per key, no forced release, and at least 0.8x the plain
// backlog's read rate; the peak of Health's Held and the holds are
// printed.
//
// Bounds come from settings (hold timeouts, discovery interval, operation
// timeouts), never from fixed figures. Run it with
//
//	go test -tags e2e -count=1 -v -timeout 30m ./e2e/handover/
package handover
