package router

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Message property names of the hand-over of moving keys (HANDOVER.md,
// section 4). Every name begins with PropPrefix, which producers refuse in
// an application's properties.
const (
	PropPrefix    = "keyroute-"
	PropMarker    = "keyroute-marker"    // on a marker: MarkerVersion
	PropProducer  = "keyroute-pid"       // the producer id, 16 lowercase hex digits
	PropEpoch     = "keyroute-epoch"     // decimal, >= 1
	PropMoved     = "keyroute-moved"     // on a marker: slots or keys leaving, decimal
	PropFrom      = "keyroute-from"      // on a moved message: its origins
	PropUnordered = "keyroute-unordered" // on a moved message released without an origin it owed
)

// MarkerVersion is the value of PropMarker: the version of HANDOVER.md.
const MarkerVersion = "1"

// Position is where the broker persisted a message in one partition: its
// Pulsar message id without the partition. Batch is -1 (the Java client)
// or 0 (pulsar-client-go) for a message not in a batch: Compare takes -1
// as 0, since an entry is either one batch or one message.
type Position struct {
	Ledger, Entry int64
	Batch         int32
}

// Compare returns -1, 0 or +1 as p is before, at or after q in their
// partition (ledger, then entry, then batch index).
func (p Position) Compare(q Position) int {
	switch {
	case p.Ledger != q.Ledger:
		return cmp64(p.Ledger, q.Ledger)
	case p.Entry != q.Entry:
		return cmp64(p.Entry, q.Entry)
	default:
		return cmp64(int64(max(p.Batch, 0)), int64(max(q.Batch, 0)))
	}
}

func cmp64(a, b int64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// Origin says where a moved key's earlier messages from one producer lie:
// on Partition of Cluster's topic, before Pos (where the producer's marker
// for the change was persisted).
type Origin struct {
	Cluster   string
	Partition int32
	Pos       Position
}

// String returns the origin's entry encoding,
// "<partition>:<ledger>:<entry>:<batch>:<cluster>".
func (o Origin) String() string {
	b := make([]byte, 0, 48+len(o.Cluster))
	return string(o.appendTo(b))
}

func (o Origin) appendTo(b []byte) []byte {
	b = strconv.AppendInt(b, int64(o.Partition), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, o.Pos.Ledger, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, o.Pos.Entry, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(o.Pos.Batch), 10)
	b = append(b, ':')
	return append(b, o.Cluster...)
}

// Marker is the content of a marker message: the producer instance that
// wrote it, the epoch of its change, and how many slots (or keys'
// partitions) leave the partition it is written on.
type Marker struct {
	Producer uint64
	Epoch    uint64
	Moved    uint64
}

// Properties returns the marker's message properties.
func (m Marker) Properties() map[string]string {
	return map[string]string{
		PropMarker:   MarkerVersion,
		PropProducer: producerID(m.Producer),
		PropEpoch:    strconv.FormatUint(m.Epoch, 10),
		PropMoved:    strconv.FormatUint(m.Moved, 10),
	}
}

// Tag is what a moved message carries: the producer instance, the epoch it
// was placed under, its open origins (none: it owes nothing) and whether
// the producer released it without an origin it owed.
type Tag struct {
	Producer  uint64
	Epoch     uint64
	From      []Origin
	Unordered bool
}

// AddTo adds the tag's properties to props, which must not be nil.
func (t Tag) AddTo(props map[string]string) {
	props[PropProducer] = producerID(t.Producer)
	props[PropEpoch] = strconv.FormatUint(t.Epoch, 10)
	if len(t.From) > 0 {
		var b []byte
		for i, o := range t.From {
			if i > 0 {
				b = append(b, ' ')
			}
			b = o.appendTo(b)
		}
		props[PropFrom] = string(b)
	}
	if t.Unordered {
		props[PropUnordered] = "1"
	}
}

func producerID(id uint64) string {
	s := strconv.FormatUint(id, 16)
	return strings.Repeat("0", 16-len(s)) + s
}

// ReservedProperty returns the first property name (in sorted order) of
// props that begins with PropPrefix, and whether there is one. A producer
// refuses such an application message.
func ReservedProperty(props map[string]string) (string, bool) {
	found, ok := "", false
	for k := range props {
		if strings.HasPrefix(k, PropPrefix) && (!ok || k < found) {
			found, ok = k, true
		}
	}
	return found, ok
}

// ParseMarker reads a marker from a received message's properties. It
// returns ok false (and no error) when props have no PropMarker: the
// message is not a marker. A message with PropMarker is a marker whatever
// else it has (HANDOVER.md, section 4): one whose properties do not follow
// HANDOVER.md, a version other than MarkerVersion included, returns ok
// true and an error naming the property (*HandoverError, ErrBadHandover);
// a reader takes it as a marker all the same, and reports it.
func ParseMarker(props map[string]string) (m Marker, ok bool, err error) {
	v, ok := props[PropMarker]
	if !ok {
		return Marker{}, false, nil
	}
	if v != MarkerVersion {
		return Marker{}, true, badProp(PropMarker, v, "unknown version")
	}
	for k, v := range props {
		switch k {
		case PropMarker, PropProducer, PropEpoch, PropMoved:
		default:
			return Marker{}, true, badProp(k, v, "not a marker property")
		}
	}
	if m.Producer, err = parseProducer(props); err != nil {
		return Marker{}, true, err
	}
	if m.Epoch, err = parseEpoch(props); err != nil {
		return Marker{}, true, err
	}
	mv, present := props[PropMoved]
	if !present {
		return Marker{}, true, badProp(PropMoved, "", "missing")
	}
	if m.Moved, err = parseDecimal(mv); err != nil {
		return Marker{}, true, badProp(PropMoved, mv, err.Error())
	}
	return m, true, nil
}

// ParseTag reads a moved message's tag from its properties. It returns ok
// false (and no error) when props have no property beginning with
// PropPrefix: the message is not a moved message. A tag that does not
// follow HANDOVER.md, or a reserved property without PropProducer, returns
// ok true and an error naming the property (*HandoverError,
// ErrBadHandover): the message owes nothing, and is reported. Call
// ParseMarker first: ParseTag refuses a marker's properties.
func ParseTag(props map[string]string) (t Tag, ok bool, err error) {
	if _, ok := props[PropProducer]; !ok {
		if k, reserved := ReservedProperty(props); reserved {
			return Tag{}, true, badProp(k, props[k], "without "+PropProducer)
		}
		return Tag{}, false, nil
	}
	if v, marker := props[PropMarker]; marker {
		return Tag{}, true, badProp(PropMarker, v, "on a moved message")
	}
	if v, moved := props[PropMoved]; moved {
		return Tag{}, true, badProp(PropMoved, v, "on a moved message")
	}
	if t.Producer, err = parseProducer(props); err != nil {
		return Tag{}, true, err
	}
	if t.Epoch, err = parseEpoch(props); err != nil {
		return Tag{}, true, err
	}
	if v, present := props[PropUnordered]; present {
		if v != "1" {
			return Tag{}, true, badProp(PropUnordered, v, `not "1"`)
		}
		t.Unordered = true
	}
	if v, present := props[PropFrom]; present {
		if t.From, err = parseOrigins(v); err != nil {
			return Tag{}, true, err
		}
	}
	for k, v := range props {
		switch k {
		case PropProducer, PropEpoch, PropFrom, PropUnordered:
		default:
			if strings.HasPrefix(k, PropPrefix) {
				return Tag{}, true, badProp(k, v, "unknown property")
			}
		}
	}
	return t, true, nil
}

func parseProducer(props map[string]string) (uint64, error) {
	v, ok := props[PropProducer]
	if !ok {
		return 0, badProp(PropProducer, "", "missing")
	}
	if len(v) != 16 {
		return 0, badProp(PropProducer, v, "not 16 hex digits")
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, badProp(PropProducer, v, "not 16 lowercase hex digits")
		}
	}
	id, _ := strconv.ParseUint(v, 16, 64) // 16 checked hex digits fit
	return id, nil
}

func parseEpoch(props map[string]string) (uint64, error) {
	v, ok := props[PropEpoch]
	if !ok {
		return 0, badProp(PropEpoch, "", "missing")
	}
	e, err := parseDecimal(v)
	if err != nil {
		return 0, badProp(PropEpoch, v, err.Error())
	}
	if e == 0 {
		return 0, badProp(PropEpoch, v, "epoch 0 is the starting topology, never a change")
	}
	return e, nil
}

// parseDecimal reads an unsigned decimal without sign or leading zeros.
func parseDecimal(s string) (uint64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') || s[0] < '0' || s[0] > '9' {
		return 0, errNotDecimal
	}
	return strconv.ParseUint(s, 10, 64)
}

// parseSigned reads a decimal that may be -1 and is at least min.
func parseSigned(s string, min, bits int) (int64, error) {
	if s == "-1" && min == -1 {
		return -1, nil
	}
	u, err := parseDecimal(s)
	if err != nil {
		return 0, err
	}
	if u > uint64(1)<<(bits-1)-1 {
		return 0, errRange
	}
	return int64(u), nil
}

func parseOrigins(v string) ([]Origin, error) {
	entries := strings.Split(v, " ")
	out := make([]Origin, 0, len(entries))
	for _, e := range entries {
		o, err := parseOrigin(e)
		if err != nil {
			return nil, badProp(PropFrom, v, "entry "+strconv.Quote(e)+": "+err.Error())
		}
		out = append(out, o)
	}
	return out, nil
}

func parseOrigin(e string) (Origin, error) {
	f := strings.SplitN(e, ":", 5)
	if len(f) != 5 {
		return Origin{}, errFields
	}
	p, err := parseSigned(f[0], 0, 32)
	if err != nil {
		return Origin{}, fieldErr("partition", err)
	}
	l, err := parseSigned(f[1], 0, 64)
	if err != nil {
		return Origin{}, fieldErr("ledger", err)
	}
	en, err := parseSigned(f[2], 0, 64)
	if err != nil {
		return Origin{}, fieldErr("entry", err)
	}
	b, err := parseSigned(f[3], -1, 32)
	if err != nil {
		return Origin{}, fieldErr("batch index", err)
	}
	name := f[4]
	if name == "" || !utf8.ValidString(name) || strings.IndexFunc(name, badNameRune) >= 0 {
		return Origin{}, errClusterName
	}
	return Origin{Cluster: name, Partition: int32(p), Pos: Position{Ledger: l, Entry: en, Batch: int32(b)}}, nil
}

// badNameRune reports a rune that SPEC.md's cluster names may not hold.
func badNameRune(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }
