package router

import (
	"errors"
	"strconv"
)

// Sentinel errors returned by New. Member-specific ones arrive wrapped in a
// *MemberError; test for them with errors.Is.
var (
	// ErrNoMembers is returned when New is given no members.
	ErrNoMembers = errors.New("router: no members")

	// ErrEmptyName is returned when a member's Name is "".
	ErrEmptyName = errors.New("router: empty member name")

	// ErrDuplicateName is returned when two members share a Name.
	ErrDuplicateName = errors.New("router: duplicate member name")

	// ErrBadWeight is returned when a member's Weight is not a finite
	// number greater than zero (zero, negative, NaN or ±Inf).
	ErrBadWeight = errors.New("router: member weight must be finite and > 0")

	// ErrTooManyMembers is returned when New is given more than MaxMembers
	// members.
	ErrTooManyMembers = errors.New("router: more than " + strconv.Itoa(MaxMembers) + " members")

	// ErrSeedCollision is returned when two distinct names hash to the same
	// 64-bit seed (see SPEC.md). With honest names this has odds of about
	// 2^-64 per pair; renaming either member resolves it.
	ErrSeedCollision = errors.New("router: member name seed collision")
)

// MemberError reports which member New rejected and why. Err is one of the
// sentinels above; Unwrap exposes it to errors.Is.
type MemberError struct {
	// Index is the member's position in the slice given to New.
	Index int
	// Name is the member's Name as given (possibly "").
	Name string
	// Err is the sentinel describing the problem.
	Err error
}

func (e *MemberError) Error() string {
	return e.Err.Error() + ": member " + strconv.Itoa(e.Index) + " " + strconv.Quote(e.Name)
}

// Unwrap returns the sentinel error.
func (e *MemberError) Unwrap() error { return e.Err }

// ErrBadHandover is returned when a message's hand-over properties
// (HANDOVER.md, section 4) do not follow their encoding. It arrives
// wrapped in a *HandoverError naming the property.
var ErrBadHandover = errors.New("router: bad hand-over property")

// HandoverError reports which hand-over property ParseMarker or ParseTag
// rejected and why; Unwrap returns ErrBadHandover.
type HandoverError struct {
	Property string // the property's name
	Value    string // its value as received ("" when missing)
	Reason   string
}

func (e *HandoverError) Error() string {
	return ErrBadHandover.Error() + ": " + e.Property + " " + strconv.Quote(e.Value) + ": " + e.Reason
}

// Unwrap returns ErrBadHandover.
func (e *HandoverError) Unwrap() error { return ErrBadHandover }

func badProp(name, value, reason string) error {
	return &HandoverError{Property: name, Value: value, Reason: reason}
}

// Reasons inside a hand-over property's value.
var (
	errNotDecimal  = errors.New("not a decimal number without sign or leading zeros")
	errRange       = errors.New("out of range")
	errFields      = errors.New("not <partition>:<ledger>:<entry>:<batch>:<cluster>")
	errClusterName = errors.New("cluster name empty or with whitespace or non-printing characters")
)

func fieldErr(field string, err error) error { return errors.New(field + ": " + err.Error()) }
