// Package ordercheck checks what readers delivered against what producers
// sent, per key and producer: the unit of order of router/HANDOVER.md.
//
// A Ledger numbers each producer's messages of a key (Next writes the
// producer, key, sequence and send time into the payload) and keeps their
// outcomes; Check reads deliveries back and counts the lost (acknowledged,
// never delivered), duplicated and reordered ones. Moved compares two
// placements of the keys; Stall, Latency and Rate give the moved keys'
// extra latency (hdrhistogram) and the unmoved keys' throughput over an
// interval, so that a suite can compare during a change with before it in
// the same run.
package ordercheck
