package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRandomizedPayloadsAsOMB(t *testing.T) {
	w, err := parseWorkload("w.yaml", []byte("topics: 1\npartitionsPerTopic: 1\nmessageSize: 1000\nproducersPerTopic: 1\n"+
		"testDurationMinutes: 1\nuseRandomizedPayloads: true\nrandomBytesRatio: 0.25\nrandomizedPayloadPoolSize: 50\n"))
	require.NoError(t, err)
	p, err := buildPayloads(&config{wl: w, seed: 1})
	require.NoError(t, err)
	require.Len(t, p.pool, 50)
	for _, b := range p.pool {
		require.Len(t, b, 1000)
		// 250 random bytes, then zeros.
		assert.Equal(t, make([]byte, 750), b[250:])
		nonZero := 0
		for _, c := range b[:250] {
			if c != 0 {
				nonZero++
			}
		}
		assert.Greater(t, nonZero, 200)
	}
	assert.NotEqual(t, p.pool[0], p.pool[1])
	assert.False(t, p.stamp, "no consumers: nothing to stamp")
}

func TestPayloadFileLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.txt")
	require.NoError(t, os.WriteFile(path, []byte("alpha\nbeta-beta\n\ngamma\n"), 0o644))
	cfg, err := parseFlags([]string{"-payload-file", path}, io.Discard)
	require.NoError(t, err)
	require.Len(t, cfg.pay.pool, 3, "empty lines skipped")
	assert.Equal(t, "beta-beta", string(cfg.pay.pool[1]))
	assert.Equal(t, 6, cfg.size, "mean length (19/3), for MB/s")
	// Each message picks one at random.
	pk := newPickers(1, 1)
	seen := map[string]bool{}
	for range 100 {
		seen[string(cfg.pay.fill(&pk[0], nil))] = true
	}
	assert.Len(t, seen, 3)

	cfg, err = parseFlags([]string{"-payload-file", path, "-payload-delimiter", "-"}, io.Discard)
	require.NoError(t, err)
	assert.Len(t, cfg.pay.pool, 2) // "alpha\nbeta", "beta\n\ngamma\n"

	_, err = parseFlags([]string{"-payload-file", path, "-size", "10"}, io.Discard)
	assert.ErrorContains(t, err, "-size: conflicts with -payload-file")
	_, err = parseFlags([]string{"-payload-file", filepath.Join(t.TempDir(), "none")}, io.Discard)
	assert.ErrorIs(t, err, errUsage)
}

func TestStampedPayloadCarriesTheSendTime(t *testing.T) {
	cfg, err := parseFlags([]string{"-subscriptions", "1", "-size", "64"}, io.Discard)
	require.NoError(t, err)
	require.True(t, cfg.pay.stamp)
	pk := newPickers(1, 1)
	buf := make([]byte, cfg.pay.maxLen)
	before := time.Now()
	b := cfg.pay.fill(&pk[0], buf)
	require.Len(t, b, 64)
	at, ok := sentAt(b)
	require.True(t, ok)
	assert.WithinDuration(t, before, at, time.Second)
	assert.Equal(t, cfg.pay.pool[0][stampBytes:], b[stampBytes:], "the rest is the payload's own")

	cfg, err = parseFlags([]string{"-subscriptions", "1", "-size", "4"}, io.Discard)
	require.NoError(t, err)
	assert.False(t, cfg.pay.stamp, "too short: end-to-end from the publish time")
}

func TestFillAllocatesNothing(t *testing.T) {
	cfg, err := parseFlags([]string{"-subscriptions", "1"}, io.Discard)
	require.NoError(t, err)
	pk := newPickers(1, 1)
	buf := make([]byte, cfg.pay.maxLen)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = cfg.pay.fill(&pk[0], buf) }))
}
