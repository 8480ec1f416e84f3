package keyroute

import (
	"errors"
	"fmt"
	"strings"
)

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

// UpdateError is Clients.Update's error when an attached producer or
// consumer could not apply the change: which step of the three (see
// Clients.Update) failed, who failed it, and where every user stands.
// errors.Is and errors.As see the users' errors.
type UpdateError struct {
	// Step is 1 (consumers take the added clusters), 2 (producers move)
	// or 3 (consumers drop the removed clusters).
	Step int
	// Failed names the users that failed (User.Name), sorted, and Errs
	// holds their errors in the same order. After step 1, a consumer that
	// could not be moved back is named again with " (moving back)".
	Failed []string
	Errs   []error
	// Undone (step 1): every consumer is back on the old topology, no
	// producer moved, and the Clients are on the old topology.
	Undone bool
	// Moved (step 2): the producers that applied the change, sorted; the
	// others are on the old topology.
	Moved []string
	// StillRead (steps 2 and 3): the removed clusters that consumers
	// still read and whose clients stay open until an Update succeeds.
	StillRead []string
}

func (e *UpdateError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "keyroute: update: step %d failed (%s) for %s", e.Step, updateSteps[min(max(e.Step, 1), 3)-1], strings.Join(e.Failed, ", "))
	switch {
	case e.Step == 1 && e.Undone:
		b.WriteString("; undone: the consumers are back on the old topology and no producer moved")
	case e.Step == 1:
		b.WriteString("; not undone for every consumer (see below); no producer moved")
	case e.Step == 2:
		fmt.Fprintf(&b, "; producers moved: %s; removed clusters still read: %s",
			listOrNone(e.Moved), listOrNone(e.StillRead))
	default:
		fmt.Fprintf(&b, "; removed clusters still read: %s", listOrNone(e.StillRead))
	}
	for i, err := range e.Errs {
		fmt.Fprintf(&b, "\n%s: %v", e.Failed[i], err)
	}
	return b.String()
}

func (e *UpdateError) Unwrap() []error { return e.Errs }

var updateSteps = [3]string{"consumers take the added clusters", "producers move", "consumers drop the removed clusters"}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
