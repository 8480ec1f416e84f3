package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

func TestParseFlagsDefaults(t *testing.T) {
	cfg, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "persistent://public/default/loadgen", cfg.topic)
	assert.Equal(t, 5, cfg.partitions)
	assert.Equal(t, 128, cfg.size)
	assert.Equal(t, 10000, cfg.keys)
	assert.Equal(t, "uniform", cfg.keyDist)
	assert.Equal(t, 20*time.Second, cfg.duration)
	assert.Equal(t, 5*time.Second, cfg.warmup)
	assert.Equal(t, "async", cfg.mode)
	assert.Equal(t, 1, cfg.senders, "async default")
	assert.True(t, cfg.batching)
	assert.Equal(t, producer.LZ4, cfg.codec)
	assert.Equal(t, producer.DefaultMaxPendingMessages, cfg.maxPending)
	assert.EqualValues(t, producer.DefaultMemoryLimit, cfg.memoryLimit)
	assert.Zero(t, cfg.txnSize)
}

func TestParseFlagsSyncDefaultSenders(t *testing.T) {
	cfg, err := parseFlags([]string{"-mode", "sync"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 16, cfg.senders)

	cfg, err = parseFlags([]string{"-mode", "sync", "-senders", "3"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 3, cfg.senders)
}

func TestParseFlagsValues(t *testing.T) {
	cfg, err := parseFlags([]string{"-compression", "zstd", "-memory-limit", "64MiB", "-key-dist", "zipf",
		"-zipf-s", "1.5", "-rate", "1000", "-intended", "-plot", "x.PNG"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, producer.ZSTD, cfg.codec)
	assert.EqualValues(t, 64<<20, cfg.memoryLimit)
	assert.Equal(t, 1.5, cfg.zipfS)
}

func TestValidateNamesTheFlag(t *testing.T) {
	cases := []struct {
		args []string
		flag string
	}{
		{[]string{"-topic", " "}, "topic"},
		{[]string{"-partitions", "-1"}, "partitions"},
		{[]string{"-rate", "-5"}, "rate"},
		{[]string{"-rate", "NaN"}, "rate"},
		{[]string{"-size", "0"}, "size"},
		{[]string{"-size", "6000000"}, "size"},
		{[]string{"-keys", "0"}, "keys"},
		{[]string{"-key-dist", "normal"}, "key-dist"},
		{[]string{"-key-dist", "zipf", "-zipf-s", "1"}, "zipf-s"},
		{[]string{"-duration", "0s"}, "duration"},
		{[]string{"-warmup", "-1s"}, "warmup"},
		{[]string{"-mode", "fast"}, "mode"},
		{[]string{"-senders", "-2"}, "senders"},
		{[]string{"-intended"}, "intended"},
		{[]string{"-batch-max-messages", "0"}, "batch-max-messages"},
		{[]string{"-linger", "0s"}, "linger"},
		{[]string{"-compression", "snappy"}, "compression"},
		{[]string{"-max-pending", "0"}, "max-pending"},
		{[]string{"-memory-limit", "0"}, "memory-limit"},
		{[]string{"-memory-limit", "100", "-size", "200"}, "memory-limit"},
		{[]string{"-send-timeout", "0s"}, "send-timeout"},
		{[]string{"-txn-size", "-1"}, "txn-size"},
		{[]string{"-txn-size", "10", "-compare-raw"}, "compare-raw"},
		{[]string{"-plot", "out.jpg"}, "plot"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := parseFlags(c.args, io.Discard)
			require.Error(t, err)
			assert.ErrorIs(t, err, errUsage)
			var ue *usageError
			require.ErrorAs(t, err, &ue)
			assert.Equal(t, c.flag, ue.Flag)
			assert.Contains(t, err.Error(), "-"+c.flag+": ")
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	_, err := parseFlags([]string{"-size", "0", "-keys", "0", "-mode", "x"}, io.Discard)
	require.Error(t, err)
	for _, f := range []string{"-size:", "-keys:", "-mode:"} {
		assert.Contains(t, err.Error(), f)
	}
}

func TestParseFlagsSyntaxErrors(t *testing.T) {
	for _, args := range [][]string{{"-nope"}, {"-size", "abc"}, {"-memory-limit", "lots"}, {"extra"}} {
		_, err := parseFlags(args, io.Discard)
		assert.ErrorIs(t, err, errUsage, "%v", args)
	}
	_, err := parseFlags([]string{"-h"}, io.Discard)
	assert.True(t, errors.Is(err, flag.ErrHelp))
}

func TestTxnNotSupportedYet(t *testing.T) {
	cfg, err := parseFlags([]string{"-txn-size", "10"}, io.Discard)
	require.NoError(t, err)
	err = checkSupported(cfg)
	if txnSupported {
		assert.NoError(t, err)
		return
	}
	assert.ErrorIs(t, err, errUsage)
	assert.Contains(t, err.Error(), "transactions not supported yet")
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{"123": 123, "64MiB": 64 << 20, "1GiB": 1 << 30, "2KB": 2000, "5 MB": 5e6, "7B": 7} {
		got, err := parseByteSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "MiB", "1.5MiB", "99999999999999999GiB"} {
		_, err := parseByteSize(in)
		assert.Error(t, err, in)
	}
}

func TestRunExitsTwoOnBadFlags(t *testing.T) {
	var stderr strings.Builder
	code := run([]string{"-rate", "-1"}, io.Discard, &stderr)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr.String(), "-rate: must be")
}

func TestRunTxnExitsTwo(t *testing.T) {
	if txnSupported {
		t.Skip("transactions are supported")
	}
	var stderr strings.Builder
	code := run([]string{"-txn-size", "5"}, io.Discard, &stderr)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr.String(), "transactions not supported yet")
}

func TestParseFlagsConsumersAndPulsarPerfParity(t *testing.T) {
	cfg, err := parseFlags([]string{"-subscriptions", "2", "-consumers", "3", "-sub-type", "shared", "-n", "5000", "-histogram-file", "h.hlog"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 2, cfg.subscriptions)
	assert.Equal(t, 3, cfg.consumers)
	assert.Equal(t, "shared", cfg.subType)
	assert.EqualValues(t, 5000, cfg.numMessages)
	assert.True(t, cfg.untilN, "-n without -duration: until the n-th message")
	assert.Zero(t, cfg.warmup, "-n without -warmup: no warm-up, as pulsar-perf")
	assert.Equal(t, 1, cfg.topics)

	cfg, err = parseFlags([]string{"-n", "10", "-duration", "3s"}, io.Discard)
	require.NoError(t, err)
	assert.False(t, cfg.untilN)
	assert.Equal(t, 3*time.Second, cfg.duration)

	for args, flag := range map[string]string{
		"-n -1":              "n",
		"-subscriptions 101": "subscriptions",
		"-consumers 0":       "consumers",
		"-sub-type fanout":   "sub-type",
		"-sub-type exclusive -consumers 2 -subscriptions 1": "sub-type",
		"-subscriptions 1 -txn-size 5":                      "subscriptions",
		"-subscriptions 1 -compare-raw":                     "subscriptions",
		"-key-dist none -txn-size 5":                        "key-dist",
	} {
		_, err := parseFlags(strings.Fields(args), io.Discard)
		var ue *usageError
		require.ErrorAs(t, err, &ue, args)
		assert.Equal(t, flag, ue.Flag, args)
	}
	for _, d := range keyDists {
		_, err := parseFlags([]string{"-key-dist", d}, io.Discard)
		assert.NoError(t, err, d)
	}
}
