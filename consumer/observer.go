package consumer

// Observer sees every message and acknowledgement of a Consumer. Its
// methods run on hot paths and must be safe for concurrent use, fast, and
// never block:
//
//   - OnReceive, on the cluster's pump goroutine, when a message is read
//     from its cluster and before it is offered to the merged stream (a
//     message dropped by SeekByTime or Close was observed but never
//     taken);
//   - OnAck after each Ack, AckID, AckCumulative and AckIDCumulative on a
//     known cluster, with its error, on the caller's goroutine;
//   - OnNack after each Nack and NackID, on the caller's goroutine.
//
// Observers must not modify the message.
type Observer interface {
	OnReceive(m *Message)
	OnAck(id ID, err error)
	OnNack(id ID)
}
