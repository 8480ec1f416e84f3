package producer

// Everything the SDK relies on about pulsar-client-go beyond its documented
// API is in this file, each point with the place in pulsar-client-go it
// depends on. internals_test.go fails when the pulsar-client-go in the
// build is not the version these were checked against (pulsarClientGo),
// and e2e/producer checks them against a real broker.

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// pulsarClientGo is the pulsar-client-go version whose internals this file
// was checked against. Moving to another version means reading each point
// below in the new source again, then changing this.
const pulsarClientGo = "v0.21.0"

// sendAlone is the DeliverAt of every transactional message. pulsar-client-go
// v0.21.0 batches a message only when its DeliverAt has UnixNano() < 0 (the
// zero time), and sets a delivery time only when UnixNano() > 0; the Unix
// epoch (exactly 0) therefore sends the message on its own, with no
// delivery time. This matters because the batch container puts the
// transaction of a batch's first message on the whole batch
// (internal/batch_builder.go, Add): a transactional message must never share
// a batch with plain messages or another transaction's.
var sendAlone = time.Unix(0, 0)

// SendTxnBulk's reserved writers (txn_bulk_write.go) batch transactional
// messages, one transaction at a time (see sendAlone for why a batch must
// not mix them). v0.21.0 also never clears a batch's transaction from the
// send command it reuses (internal/batch_builder.go: Add sets TxnidMostBits
// and TxnidLeastBits for a transactional first message, reset leaves them;
// the open apache/pulsar-client-go#1499 clears them), so a writer's plain
// batch after a transactional one goes out with that transaction's id. A
// 4.0.8 broker accepted and delivered such batches when tried (e2e/txn),
// so no effect is pinned; the SDK never sends one: a reserved
// writer carries only transactional messages, and a partition's own writer
// never batches one.

// notSent reports whether err, an error pulsar-client-go reported for one
// message, means that the message never left the client. In v0.21.0 these
// come from the checks in internalSendAsync and validateMsg, before the
// message is queued (producer_partition.go, reserveSemaphore and reserveMem
// for ErrContextExpired, the ctx.Err() checks before dataChan), or from a
// batch that could not take it (ErrFailAddToBatch); the caller's ctx is not
// consulted once the message is queued. ErrProducerClosed is not among
// them: failPendingMessages also fails messages already written with it.
// Any other error leaves the outcome unknown: ErrSendTimeout fails
// messages of the pending queue, which may have reached the broker.
func notSent(err error) bool {
	for _, e := range notSentErrs {
		if errors.Is(err, e) {
			return true
		}
	}
	return encryptFailed(err)
}

// encryptFailed reports whether err is pulsar-client-go's failure to
// encrypt a message under ProducerCryptoFailureActionFail. v0.21.0
// encrypts while it serialises the message or batch, before writing it
// (internal/commands.go, serializeMessage: "encryption of message failed,
// ProducerCryptoFailureAction is set to Fail. Error: ...", around
// internal/crypto/producer_encryptor.go's own "ProducerCryptoFailureAction
// is set to Fail and error occurred in encrypting payload"), and wraps no
// sentinel: the text is the only mark. e2e/parity checks it on a broker.
func encryptFailed(err error) bool {
	return err != nil && strings.Contains(err.Error(), encryptFailedText)
}

const encryptFailedText = "ProducerCryptoFailureAction is set to Fail"

var notSentErrs = []error{
	context.Canceled,
	context.DeadlineExceeded,
	pulsar.ErrContextExpired,
	pulsar.ErrMessageTooLarge,
	pulsar.ErrInvalidMessage,
	pulsar.ErrSchema,
	pulsar.ErrTransaction,
	pulsar.ErrFailAddToBatch,
	pulsar.ErrMemoryBufferIsFull,
	pulsar.ErrSendQueueIsFull,
}

// A transaction's hand-overs: the SDK hands a transaction's messages to their
// partitions' writers one at a time (txnCluster.handMu), though the
// partitions are written by goroutines of their own. pulsar-client-go
// v0.21.0 registers a partition with the transaction on its first send,
// inside SendAsync (producer_partition.go, validateMsg), and
// transaction.registerProducerTopic reads the transaction's map of
// registered partitions without its lock before writing it under the lock
// (transaction_impl.go): two partitions' first sends at once are a data
// race, and Go may end the process with "concurrent map read and map
// write". (The same unlocked read on the ack side is
// apache/pulsar-client-go#1536.) The registration's round trip already
// runs under that lock, so serialising costs no parallelism.
