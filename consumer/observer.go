package consumer

// Observer sees every message and acknowledgement of a Consumer. Its
// methods run on hot paths and must be safe for concurrent use, fast, and
// never block:
//
//   - OnReceive once a message is handed to the caller: on the caller's
//     goroutine before Receive or ReceiveBatch returns it, on Chan's
//     goroutine after the caller took it from Chan (so possibly while the
//     caller already processes and acknowledges it); messages dropped by
//     SeekByTime or Close are not observed;
//   - OnAck after each Ack, AckID, AckCumulative and AckIDCumulative that
//     reached a cluster's pulsar-client-go consumer, with its error, on
//     the caller's goroutine (calls refused before, for an unknown
//     cluster, a closed Consumer or a cumulative ack on a Shared
//     subscription, return their error without being observed);
//   - OnNack after each Nack and NackID, on the caller's goroutine.
//
// Observers must not modify the message, nor keep it past the call
// (ReceiveInto hands over Messages in a buffer the caller reuses).
type Observer interface {
	OnReceive(m *Message)
	OnAck(id ID, err error)
	OnNack(id ID)
}
