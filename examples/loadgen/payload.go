package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// stampBytes is the size of the send time loadgen writes at the start of
// every payload when it also consumes (see payloads.stamp).
const stampBytes = 8

// payloads is the set of payloads messages are drawn from: one, or a pool
// each message picks from at random (OMB's randomized payloads, the lines
// of -payload-file). It is read-only once built.
type payloads struct {
	pool    [][]byte
	maxLen  int
	meanLen float64
	// stamp: each message carries its send time (unix ns, big-endian) in
	// its first 8 bytes, for the end-to-end latency; the rest is the
	// payload's own. It is on when loadgen consumes and every payload has
	// room for it; otherwise end-to-end latency is measured from the
	// broker's publish time (milliseconds, as OMB does).
	stamp bool
	desc  string // where they come from, for the report
}

// buildPayloads makes the payloads cfg asks for: a workload's randomized
// pool or payloadFile, the lines of -payload-file, or one payload of
// -size pseudo-random bytes.
func buildPayloads(cfg *config) (*payloads, error) {
	var p payloads
	rng := rand.New(rand.NewPCG(cfg.seed, 0x706179)) // "pay"
	switch w := cfg.wl; {
	case w != nil && w.UseRandomizedPayloads:
		// As OMB: randomBytes random bytes, then zeros, per pool entry.
		random := int(float64(w.MessageSize) * w.RandomBytesRatio)
		for range w.RandomizedPayloadPoolSize {
			b := make([]byte, w.MessageSize)
			for i := range random {
				b[i] = byte(rng.Uint32())
			}
			p.pool = append(p.pool, b)
		}
		p.desc = fmt.Sprintf("%d randomized payloads (%.0f%% random bytes)", w.RandomizedPayloadPoolSize, 100*w.RandomBytesRatio)
	case w != nil && w.PayloadFile != "":
		path := w.payloadPath()
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, &workloadError{File: w.path, Field: "payloadFile", Reason: err.Error()}
		}
		if len(b) != w.MessageSize {
			return nil, &workloadError{File: w.path, Field: "payloadFile",
				Reason: fmt.Sprintf("%s has %d bytes, messageSize is %d (OMB requires them equal)", path, len(b), w.MessageSize)}
		}
		p.pool = [][]byte{b}
		p.desc = "payload file " + path
	case cfg.payloadFile != "":
		b, err := os.ReadFile(cfg.payloadFile)
		if err != nil {
			return nil, bad("payload-file", "%v", err)
		}
		for _, line := range bytes.Split(b, []byte(cfg.payloadDelim)) {
			if len(line) == 0 {
				continue
			}
			if len(line) > maxMessageSize {
				return nil, bad("payload-file", "a payload of %d bytes is above %d", len(line), maxMessageSize)
			}
			p.pool = append(p.pool, line)
		}
		if len(p.pool) == 0 {
			return nil, bad("payload-file", "%s has no payload (empty, or only delimiters)", cfg.payloadFile)
		}
		p.desc = fmt.Sprintf("%d payload(s) from %s", len(p.pool), cfg.payloadFile)
	default:
		p.pool = [][]byte{makePayload(cfg.size, cfg.seed)}
		p.desc = fmt.Sprintf("%d random bytes", cfg.size)
	}
	total := 0
	minLen := p.pool[0]
	for _, b := range p.pool {
		total += len(b)
		p.maxLen = max(p.maxLen, len(b))
		if len(b) < len(minLen) {
			minLen = b
		}
	}
	p.meanLen = float64(total) / float64(len(p.pool))
	p.stamp = cfg.subscriptions > 0 && len(minLen) >= stampBytes
	return &p, nil
}

// makePayload returns size pseudo-random bytes. Random bytes keep
// compression honest; they are generated once.
func makePayload(size int, seed uint64) []byte {
	b := make([]byte, size)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// picker chooses payloads for one sender; each sender owns one.
type picker struct {
	pcg rand.PCG
	_   [48]byte // keep senders' pickers off each other's cache lines
}

func newPickers(senders int, seed uint64) []picker {
	ps := make([]picker, senders)
	for i := range ps {
		ps[i].pcg.Seed(seed, uint64(i)+0x7069636b)
	}
	return ps
}

// fill returns the payload of the next message of the sender that owns pk:
// a pool entry (shared, not to be modified) or, when stamping, a copy in
// buf (at least maxLen long) with the send time in its first 8 bytes.
func (p *payloads) fill(pk *picker, buf []byte) []byte {
	src := p.pool[0]
	if len(p.pool) > 1 {
		src = p.pool[pk.pcg.Uint64()%uint64(len(p.pool))]
	}
	if !p.stamp {
		return src
	}
	b := buf[:len(src)]
	copy(b[stampBytes:], src[stampBytes:])
	binary.BigEndian.PutUint64(b, uint64(time.Now().UnixNano()))
	return b
}

// sentAt reads the send time stamped in a payload.
func sentAt(b []byte) (time.Time, bool) {
	if len(b) < stampBytes {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))), true
}
