// Package router decides where a message goes: which of N independent Pulsar
// clusters, and which partition of the topic inside that cluster. It owns
// the placement function and nothing else; it opens no connections.
//
// Data flows topology -> router -> producer. The producer builds a Router
// from the topology's cluster names and weights with New, and for each
// message computes
//
//	h := router.Hash(key)           // or router.KeylessHash(seq) for no key
//	c := r.Cluster(h)               // index into the topology's clusters
//	p := router.Partition(h, n)     // n = partitions of the topic in cluster c
//
// The exact function, with its constants, is written down in SPEC.md next to
// this file so that clients in other languages can place keys the same way;
// testdata/vectors.json holds known-answer vectors that the tests check.
//
// # Cluster choice: weighted rendezvous hashing
//
// A key goes to the member with the highest score for the key's slot (see
// below), where each member's score is a hash of the slot and the member's
// name. This is rendezvous
// (highest random weight) hashing. It was chosen over jump consistent hash
// because:
//
//   - Members are identified by name, not by position. Jump hash maps to
//     buckets 0..N-1 and can only add or remove the last bucket without
//     moving other keys; rendezvous can remove any cluster, and then moves
//     only the keys that cluster owned, spread evenly over the rest.
//     Reordering the topology moves nothing.
//   - Weights are natural: with unequal weights, a member's score becomes
//     -w/ln(u), which makes it win a w/sum(w) share of keys; changing one
//     member's weight moves keys only to or from that member.
//   - Adding a member moves only the keys it wins, its fair share (1/6 when a
//     sixth equal cluster joins five), and every moved key moves to it.
//
// # Slots: ranking once per slot, not once per key
//
// Ranking N members costs one 64x64->128-bit multiply each, plus a select
// chain whose winner is random, several times the cost of hashing the key
// for a handful of clusters. So the ranking is done once per slot instead:
// a key's slot is the top 16 bits of its hash, New ranks the members for
// each of the 65536 slots (a few milliseconds), and Cluster is one lookup
// in a 64 KiB table. The path is then xxhash plus a lookup, whatever the
// number of members and whether or not weights differ (BenchmarkRoute).
//
// Every property above still holds exactly, slot by slot, since each slot's
// owner is a rendezvous choice. What slots cost is precision of shares: a
// member owns its slots' share of keys, which differs from its ideal share
// by about 0.8% of that share for five equal members (one standard
// deviation; the tests bound it), and a member weighted below about 1/65536
// of the total may own no slot. Redis Cluster makes the same trade with
// 16384 slots.
//
// The score is the output function of the wyrand generator applied to
// v + seed, where v is the slot's SplitMix64 value. The tests check the
// resulting shares, the joint spread with partitions, and the movement
// bounds on a fixed sample of a million keys, and a fuzz test compares the
// code with a literal transcription of SPEC.md.
//
// # Partition choice
//
// The partition is the jump consistent hash (Lamping and Veach) of the 48
// low bits of the key hash, the ones the slot does not use, computed in
// integers only so that every language gets the same answer. They are
// independent of the cluster choice, so a partition count that is a
// multiple of the cluster count shows no skew. Growing a topic from P to Q
// partitions moves (Q-P)/Q of its keys, the least possible, and only to
// the new partitions P to Q-1: a key whose partition under Q is below P
// did not move.
//
// # Messages without a key
//
// The empty key "" means "no key" in Pulsar, and the producer treats it so.
// Keyless messages are placed with KeylessHash(seq), where seq is a counter
// the producer keeps: consecutive values land on clusters and partitions as
// if they had random keys, so keyless traffic spreads evenly over all
// clusters in proportion to their weights, with no ordering promise. A
// producer that batches may advance seq once per batch rather than once per
// message, as Pulsar's round-robin router does, to keep batches full.
//
// # Hand-over of moving keys
//
// When the topology changes, the keys that move keep their order through
// the hand-over that HANDOVER.md specifies: a marker message on each old
// partition, and properties on the moved messages at their new owner
// saying where their key's earlier messages lie. This package owns the
// encodings (Marker, Tag, Origin, Position; testdata/handover.json holds
// known answers); the producer and the consumer own the protocol's steps.
//
// # Concurrency and stability
//
// A Router is immutable after New; all its methods and the package's
// functions are safe for concurrent use and do not allocate.
//
// Placement is a contract. The same key, member names, weights and partition
// count give the same cluster and partition in every version and on every
// platform (SPEC.md notes the one floating-point caveat of unequal weights);
// SPEC.md and the vectors pin it, and a test fails if it shifts.
// Changing it is a breaking change that needs a new version of SPEC.md and
// regenerated vectors (go test ./router -run TestVectors -args -update).
package router
