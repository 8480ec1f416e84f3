// Package changefaults is the e2e suite of faults during a topology
// change, on three real local Pulsar clusters, with topics in a
// namespace without topic auto-creation (so that a topic missing on a
// cluster is refused there, as on a cluster run so):
//
//   - keyroute.Clients.Update with a consumer that cannot take the added
//     cluster (its topic missing there): step 1 fails and is undone, no
//     producer moves (Epoch unchanged, nothing written to the added
//     cluster), and the producers and the consumer keep working;
//   - keyroute.Clients.Update with a producer that cannot move (its topic
//     missing on the added cluster) while another producer moves under
//     load: step 2 fails, the removed cluster is still read, and a second
//     Update after the topic is made finishes the change;
//   - producer.Update adding a cluster that accepts connections and never
//     answers (with a ctx that ends first: nothing applied, the ctx's
//     error; then added down: its keys fail fast) and one that refuses
//     (the topic missing there: refused, nothing applied), then Close;
//     and Close, with such a cluster added, given a ctx shorter than
//     that cluster's timeouts: it returns at the ctx's end;
//   - the old owner's JVM stopped (SIGSTOP) during a drain under load,
//     under OnClusterDown FailFast (the held messages fail, not written),
//     WaitUp (they wait DownWait longer, then fail; none unordered) and
//     Spill (they are written marked unordered), then resumed;
//   - two producer instances applying the same change one after the
//     other (router/HANDOVER.md section 9), under load;
//   - a consumer process SIGKILLed while it holds moved messages (a new
//     consumer on the subscription delivers the rest, each key in order,
//     no forced release), and a producer process SIGKILLed after its
//     markers went to a stopped old owner, before it released (a
//     restarted producer and the consumer: nothing acknowledged lost,
//     order kept, every hold ended); both run in a child process, the
//     test binary again (TestChangeChild);
//   - consumer.Update adding a cluster where the Retry topic is missing,
//     with ReconsumeLater calls running: refused naming the cluster,
//     nothing applied, the calls back within their ctx;
//   - Close without a ctx deadline with a silent cluster added: within
//     that cluster's operation timeout and keep-alive.
//
// A cluster that refuses a token needs a secure bed: e2e/security has
// that spec.
//
// Each spec checks that no acknowledged message is lost, none is
// delivered twice beyond the redeliveries the consumer counts, per-key
// order holds or each break is counted by the consumer's Health, every
// message handed to SendAsync gets exactly one outcome, and every call
// returns by itself within its ctx. Bounds come from the settings the
// specs set (StartTimeout, SendTimeout, HandoverTimeout, DrainTimeout),
// never from fixed figures. Run it with
//
//	go test -tags e2e -count=1 -v -timeout 30m ./e2e/changefaults/
package changefaults
