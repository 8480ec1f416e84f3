package consumer

import (
	"errors"
	"fmt"

	"github.com/keyroute/keyroute"
)

var (
	// ErrNoTopic is returned by New when no Topic option is given (or
	// Topics with no name): pass Topic.
	ErrNoTopic = errors.New("consumer: no topic (the Topic option is required)")
	// ErrNoSubscription is returned by New when no Subscription option is
	// given: pass Subscription.
	ErrNoSubscription = errors.New("consumer: no subscription name (the Subscription option is required)")
	// ErrBadOption (keyroute.ErrBadOption) is returned by New when an
	// option has a value it cannot take; the error names the option and
	// the value. Fix the configuration: a retry fails the same way.
	ErrBadOption = keyroute.ErrBadOption
	// ErrBadTopology (keyroute.ErrBadTopology) is returned by New and
	// Update for a nil or invalid topology; the error names the cluster and field. Fix
	// the topology file.
	ErrBadTopology = keyroute.ErrBadTopology
	// ErrConnect is matched by Health's Err for a cluster that is not
	// subscribed (yet), and by New's error, for each cluster it names,
	// when its ctx ended before the cluster answered: the *ClusterError
	// names the cluster and holds the last attempt's error. Check that
	// cluster's URL and credentials; it joins by itself once it answers.
	ErrConnect = errors.New("consumer: cannot subscribe")
	// ErrTopicNotFound is returned by New (in a *ClusterError) when the
	// topic does not exist on a cluster (see RequireTopic). Create it
	// there (keyroute topics create), then retry.
	ErrTopicNotFound = errors.New("consumer: topic not found")
	// ErrClosed (keyroute.ErrClosed) is returned by every call on a closed
	// Consumer, and by Receive once Close has begun: stop reading. Messages
	// not acknowledged come again to the subscription.
	ErrClosed = keyroute.ErrClosed
	// ErrUnknownCluster is returned by AckID, NackID and
	// AckIDCumulative for an ID whose cluster is not one of the
	// Consumer's (an ID from another consumer, or a zero ID: a bug in the
	// caller, which must acknowledge IDs this Consumer delivered; or one
	// of a cluster an Update removed and that has been closed since: the
	// message stays unacknowledged on that cluster). SeekByID and New
	// (StartAfter) return it, in a *ClusterError, for a position on a
	// cluster that is not in the topology: nothing was moved.
	ErrUnknownCluster = errors.New("consumer: unknown cluster")
	// ErrUnknownTopic is returned, in a *ClusterError, by a Consumer of
	// several topics (Topics) for a Message or ID whose Topic is not one
	// of them: an ID saved without its Topic, or one of another
	// consumer. SeekByID returns it with ErrBadPosition, and nothing was
	// moved.
	ErrUnknownTopic = errors.New("consumer: the ID's Topic is not one of the Consumer's Topics")
	// ErrNoAdmin is returned by SeekByID and New (StartAfter), in a
	// *ClusterError, for a position on a cluster whose topology entry
	// has no AdminURL: positions are set over the admin API (a
	// consumertest fake needs none). Give the cluster its admin URL;
	// nothing was moved.
	ErrNoAdmin = errors.New("consumer: the cluster has no admin URL (positions are set over the admin API)")
	// ErrBadPosition is returned by SeekByID, New (StartAfter) and
	// ParseID for an ID that is not a position of the topic: no Pulsar
	// message ID, a Partition that differs from the Pulsar ID's, two IDs
	// for one partition, a partition the topic does not have on that
	// cluster (in a *ClusterError), or a text that does not parse. A bug
	// in the caller or a saved position of another topic. SeekByID moved
	// nothing; New, which positions each cluster as it subscribes, may
	// have moved the cursors of the clusters it positioned before it met
	// the bad one.
	ErrBadPosition = errors.New("consumer: not a position of the topic")
	// ErrCumulativeAck is returned by AckCumulative and AckIDCumulative on
	// a Shared or KeyShared subscription, where Pulsar allows no
	// cumulative acknowledgement. Acknowledge each message (Ack), or use an
	// Exclusive or Failover subscription.
	ErrCumulativeAck = errors.New("consumer: cumulative acknowledgement needs an Exclusive or Failover subscription")
	// ErrBadMax is returned by ReceiveBatch when max is below 1: a bug in
	// the caller.
	ErrBadMax = errors.New("consumer: ReceiveBatch needs max >= 1")
	// ErrDecode is returned by Typed's Decode and Receive when a
	// message's Value does not decode with the schema; the error names
	// the message. The message stays unacknowledged: acknowledge it to
	// skip it, or Nack it to send it (with DeadLetter) towards the
	// dead-letter topic.
	ErrDecode = errors.New("consumer: value does not decode with the schema")
	// ErrConsumerBusy is returned by New (in a *ClusterError, with the
	// broker's *BrokerError) when a cluster's broker refuses the
	// subscription because a consumer that excludes this one is attached
	// (Pulsar's ConsumerBusy): another Exclusive consumer, or one of
	// another type. Retry once that consumer has left.
	ErrConsumerBusy = errors.New("consumer: subscription busy (a consumer that excludes this one is attached)")
	// ErrNilMessage is returned by Ack, Nack and AckCumulative for a nil
	// message, and by ReconsumeLater for one not received by a Consumer
	// (without Raw): a bug in the caller.
	ErrNilMessage = errors.New("consumer: nil message")
	// ErrNoRetry is returned by ReconsumeLater on a Consumer made without
	// the Retry option, which has no retry topic to send to: add Retry.
	ErrNoRetry = errors.New("consumer: ReconsumeLater needs the Retry option")
	// ErrReservedProperty is returned by ReconsumeLater for a property
	// whose name begins with "keyroute-", reserved for keyroute's
	// hand-over (router/HANDOVER.md); the error names it. Rename it.
	ErrReservedProperty = errors.New("consumer: property name reserved for keyroute's hand-over")
)

// ClusterError is an error of one cluster: which, in what step, and the
// cause (pulsar-client-go's error, or a sentinel of this package).
type ClusterError struct {
	Cluster string
	Op      string // "connect", "subscribe", "check topic", "ack", "seek", ...
	Err     error
}

func (e *ClusterError) Error() string {
	return fmt.Sprintf("consumer: cluster %q: %s: %v", e.Cluster, e.Op, e.Err)
}

func (e *ClusterError) Unwrap() error { return e.Err }

func clusterErr(cluster, op string, err error) error {
	if err == nil {
		return nil
	}
	return &ClusterError{Cluster: cluster, Op: op, Err: err}
}
