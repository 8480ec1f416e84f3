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
// A key goes to the member with the highest score, where each member's score
// is a hash of the key hash and the member's name. This is rendezvous
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
// The cost is O(N) per message: one 64x64->128-bit multiply per member,
// about 1.3 ns each on the development machine (7 ns for 5 clusters, 22 ns
// for 16), where jump hash took about 24 ns for 10 buckets. That is fine up
// to the dozen or so clusters a deployment has. With all weights equal the
// path is pure integer arithmetic and branch-free; with unequal weights it
// takes one natural logarithm per member (about 100 ns for 5 clusters).
//
// The score is the output function of the wyrand generator applied to
// h + seed rather than the SplitMix64 finalizer: it needs one 128-bit
// multiply instead of two 64-bit ones, which measured about 30% faster for
// the whole Hash, Cluster and Partition path. The tests check the resulting
// shares, the joint spread with partitions, and the movement bounds on a
// fixed sample of a million keys, and a fuzz test compares the code with a
// literal transcription of SPEC.md.
//
// # Partition choice
//
// The partition comes from the score of a virtual member with a reserved
// seed, reduced to [0, n) by Lemire's multiply-shift (the high 64 bits of
// score * n). Its bits are as independent of the cluster choice as two
// members' scores are of each other, so a partition count that is a multiple
// of the cluster count shows no skew. Like Pulsar's own hash routing, it is
// not consistent across a change of partition count: growing a topic from n
// to n+1 partitions keeps about half of the keys in place. Jump hash would
// keep n/(n+1), but costs more than the rest of the path together (about
// 24 ns at n = 10 here), and Pulsar gives no ordering promise across a
// partition change anyway.
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
