package keyroute

import "errors"

var (
	// ErrClosed is returned by Client and Attach once Close has begun.
	ErrClosed = errors.New("keyroute: clients closed")
	// ErrUnknownCluster is returned by Client for a name that is not a
	// cluster of the Clients' topology.
	ErrUnknownCluster = errors.New("keyroute: unknown cluster")
	// ErrBadTopology is returned by NewClients for a nil or invalid
	// topology.
	ErrBadTopology = errors.New("keyroute: bad topology")
	// ErrBadOption is returned by NewClients when an option has a value it
	// cannot take; the error names the option and the value.
	ErrBadOption = errors.New("keyroute: bad option")
	// ErrOtherTopology is returned (by producer.New and consumer.New) when
	// the topology given differs from the one the Clients were made for:
	// the error names the first cluster that differs.
	ErrOtherTopology = errors.New("keyroute: the clients were made for another topology")
	// ErrNotOpen is returned by Client for a cluster whose client
	// NewClients has not made yet (it gave no answer in time): the error
	// says why; it is made in the background.
	ErrNotOpen = errors.New("keyroute: client not open yet")
)
