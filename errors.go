package keyroute

import "errors"

// ErrClosed, ErrBadTopology and ErrBadOption are also the producer's and
// the consumer's (producer.ErrClosed is ErrClosed): one sentinel for one
// condition, whichever package reports it.
var (
	// ErrClosed is returned by a call on closed (or closing) Clients,
	// Producer or Consumer: by Client and Attach once Close has begun.
	ErrClosed = errors.New("keyroute: closed")
	// ErrUnknownCluster is returned by Client for a name that is not a
	// cluster of the Clients' topology.
	ErrUnknownCluster = errors.New("keyroute: unknown cluster")
	// ErrBadTopology is returned by NewClients (and producer.New,
	// consumer.New) for a nil or invalid topology; the error names the
	// cluster and field.
	ErrBadTopology = errors.New("keyroute: bad topology")
	// ErrBadOption is returned by NewClients (and producer.New,
	// consumer.New) when an option has a value it cannot take; the error
	// names the option and the value.
	ErrBadOption = errors.New("keyroute: bad option")
	// ErrOtherTopology is returned (by producer.New and consumer.New) when
	// the topology given differs from the one the Clients were made for:
	// the error names the first cluster that differs.
	ErrOtherTopology = errors.New("keyroute: the clients were made for another topology")
	// ErrNotOpen is returned by Client for a cluster whose client
	// NewClients has not made yet (it gave no answer in time): the error
	// says why; it is made in the background.
	ErrNotOpen = errors.New("keyroute: client not open yet")
	// ErrCannotFollow is returned by Clients.Update while a user attached
	// with Attach (no Update of its own) is open: close it, or attach it
	// with AttachUser and an Update, first.
	ErrCannotFollow = errors.New("keyroute: an attached user cannot follow a topology change")
)
