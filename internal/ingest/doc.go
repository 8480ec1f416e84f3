// Package ingest is the HTTP front of the examples/ingest service: it turns
// JSON events into keyroute messages and reports per-cluster health from the
// outcomes it sees. It lives in internal/ so that the e2e suite can run the
// very server the example runs; examples/ingest/main.go only wires flags,
// the topology, telemetry and signals around Run.
//
// Data flows topology -> router -> producer <- ingest: a request is decoded,
// handed to the producer (Send for "sync": true, SendAsync otherwise), and
// its outcome is recorded against the cluster the key is placed on.
//
// # API
//
//	POST /events  {"key": "user-42", "payload": "...", "encoding": "base64", "sync": true}
//
// key is required (it orders the events of one key and picks the cluster).
// payload is a JSON string sent as its UTF-8 bytes; with "encoding":
// "base64" it is standard base64 and sent decoded, for binary payloads.
// With "sync": true the handler waits for the broker's acknowledgement and
// answers 200 {"id": "cluster/partition/ledger:entry:batch", "cluster": ...,
// "partition": ...}. Otherwise it answers 202 {"cluster": ..., "partition":
// ...} once the producer has accepted the event; the outcome arrives later
// and is counted in /healthz. Errors answer {"error": "..."} with 400 (bad
// request), 413 (too large), 503 (closed), 504 (timeout) or 502.
//
// Events of one key keep their order when each request is sent after the
// previous one for that key was answered.
//
//	GET /healthz
//
// answers 200, or 503 when any cluster is degraded, with every cluster's
// state: last success, last error, in-flight count, counters. A cluster is
// degraded when the producer counts it as down (producer.Health: messages
// held without an acknowledgement for DownAfter), or when the service's
// most recent outcome there was a failure.
package ingest
