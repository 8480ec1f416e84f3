package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ombStyle is a workload written as OMB's own workloads/*.yaml are (every
// field loadgen reads), with a payload file beside it.
const ombStyle = `
name: 1 topic / 3 partitions / 100b

topics: 1
partitionsPerTopic: 3
keyDistributor: "KEY_ROUND_ROBIN"
messageSize: 100
payloadFile: "payload/payload-100b.data"
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 3
producerRate: 50000
consumerBacklogSizeGB: 0
testDurationMinutes: 15
`

func writeWorkload(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "workloads", "w.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

func TestWorkloadFieldsAreOMBs(t *testing.T) {
	var want []string
	for _, f := range readFixture(t, "testdata/omb_workload_fields.txt") {
		want = append(want, f.name)
	}
	assert.ElementsMatch(t, want, workloadFields)
}

func TestParseOMBWorkload(t *testing.T) {
	w, err := parseWorkload("w.yaml", []byte(ombStyle))
	require.NoError(t, err)
	assert.Equal(t, "1 topic / 3 partitions / 100b", w.Name)
	assert.Equal(t, 1, w.Topics)
	assert.Equal(t, 3, w.PartitionsPerTopic)
	assert.Equal(t, keyRoundRobin, w.KeyDistributor)
	assert.Equal(t, 100, w.MessageSize)
	assert.Equal(t, "payload/payload-100b.data", w.PayloadFile)
	assert.Equal(t, 3, w.ProducersPerTopic)
	assert.Equal(t, 50000, w.ProducerRate)
	assert.Equal(t, 15, w.TestDurationMinutes)
	// OMB's defaults for the fields the file leaves out.
	assert.Equal(t, 1, w.WarmupDurationMinutes)
	assert.Equal(t, 1.0, w.BacklogDrainRatio)
}

func TestWorkloadDefaults(t *testing.T) {
	w, err := parseWorkload("dir/my-load.yml", []byte("topics: 2\npartitionsPerTopic: 4\nmessageSize: 64\nproducersPerTopic: 1\ntestDurationMinutes: 1\n"))
	require.NoError(t, err)
	assert.Equal(t, "my-load", w.Name, "name defaults to the file's base name")
	assert.Equal(t, keyNone, w.KeyDistributor, "OMB's default distributor")
	assert.Equal(t, 1, w.WarmupDurationMinutes)
	assert.Zero(t, w.SubscriptionsPerTopic)
	assert.Zero(t, w.ProducerRate)
	assert.False(t, w.UseRandomizedPayloads)
}

func TestWorkloadUnknownFieldIsAnErrorNamingIt(t *testing.T) {
	_, err := parseWorkload("w.yaml", []byte(ombStyle+"producerRateX: 5\nsubscriptionPerTopic: 2\nTopics: 3\n"))
	require.Error(t, err)
	assert.ErrorIs(t, err, errUsage)
	var we *workloadError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, "producerRateX", we.Field)
	assert.Equal(t, 15, we.Line)
	msg := err.Error()
	assert.Contains(t, msg, `w.yaml:15: producerRateX: unknown field`)
	assert.Contains(t, msg, `w.yaml:16: subscriptionPerTopic: unknown field`, "every unknown field is named")
	assert.Contains(t, msg, `did you mean "topics"?`)
}

func TestWorkloadValuesAreChecked(t *testing.T) {
	for field, body := range map[string]string{
		"consumerBacklogSizeGB":     strings.Replace(ombStyle, "consumerBacklogSizeGB: 0", "consumerBacklogSizeGB: 512", 1),
		"keyDistributor":            strings.Replace(ombStyle, `"KEY_ROUND_ROBIN"`, "ZIPF", 1),
		"topics":                    strings.Replace(ombStyle, "topics: 1", "topics: 0", 1),
		"messageSize":               strings.Replace(ombStyle, "messageSize: 100", "messageSize: 0", 1),
		"testDurationMinutes":       strings.Replace(ombStyle, "testDurationMinutes: 15", "testDurationMinutes: 0", 1),
		"producerRate":              strings.Replace(ombStyle, "producerRate: 50000", "producerRate: -1", 1),
		"randomizedPayloadPoolSize": ombStyle + "useRandomizedPayloads: true\nrandomBytesRatio: 0.5\n",
		"randomBytesRatio":          ombStyle + "useRandomizedPayloads: true\nrandomBytesRatio: 1.5\nrandomizedPayloadPoolSize: 10\n",
		"consumerPerSubscription":   strings.Replace(ombStyle, "consumerPerSubscription: 1", "consumerPerSubscription: 0", 1),
		"warmupDurationMinutes":     ombStyle + "warmupDurationMinutes: -1\n",
	} {
		t.Run(field, func(t *testing.T) {
			_, err := parseWorkload("w.yaml", []byte(body))
			var we *workloadError
			require.ErrorAs(t, err, &we)
			assert.Equal(t, field, we.Field)
			assert.ErrorIs(t, err, errUsage)
		})
	}
	_, err := parseWorkload("w.yaml", []byte(strings.Replace(ombStyle, "consumerBacklogSizeGB: 0", "consumerBacklogSizeGB: 512", 1)))
	assert.Contains(t, err.Error(), "not supported")
}

func TestWorkloadSyntaxErrors(t *testing.T) {
	for _, body := range []string{"", "- a\n- b\n", "topics: [\n", "topics: many\n", "topics: 1\ntopics: 2\n"} {
		_, err := parseWorkload("w.yaml", []byte(body))
		assert.ErrorIs(t, err, errUsage, "%q", body)
	}
}

func TestWorkloadSetsTheConfig(t *testing.T) {
	path := writeWorkload(t, strings.Replace(ombStyle, "payloadFile: \"payload/payload-100b.data\"\n", "", 1)+"warmupDurationMinutes: 2\n")
	cfg, err := parseFlags([]string{"-workload", path, "-omb-minute", "6s", "-topology", "t.yaml"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 1, cfg.topics)
	assert.Equal(t, 3, cfg.partitions)
	assert.Equal(t, 3, cfg.producersPerTopic)
	assert.Equal(t, 3, cfg.senders, "one sender per producer")
	assert.Equal(t, 1, cfg.subscriptions)
	assert.Equal(t, 1, cfg.consumers)
	assert.Equal(t, 100, cfg.size)
	assert.Equal(t, 50000.0, cfg.rate)
	assert.Equal(t, 90*time.Second, cfg.duration, "15 minutes of 6 s")
	assert.Equal(t, 12*time.Second, cfg.warmup)
	assert.Equal(t, "round-robin", cfg.keyDist)
	assert.Equal(t, ombKeyCount, cfg.keys)
	assert.Equal(t, 1, ombIntervalSeconds(cfg.ombMinute))
	assert.Equal(t, 10, ombIntervalSeconds(time.Minute))
	assert.True(t, cfg.pay.stamp, "consumers: payloads carry the send time")
}

func TestWorkloadConflictsWithFlagsItSets(t *testing.T) {
	path := writeWorkload(t, strings.Replace(ombStyle, "payloadFile: \"payload/payload-100b.data\"\n", "", 1))
	_, err := parseFlags([]string{"-workload", path, "-size", "200", "-duration", "10s", "-batching=false"}, io.Discard)
	require.Error(t, err)
	var ue *usageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "-size: conflicts with -workload")
	assert.Contains(t, err.Error(), "messageSize")
	assert.Contains(t, err.Error(), "-duration: conflicts with -workload")
	assert.NotContains(t, err.Error(), "-batching")

	_, err = parseFlags([]string{"-omb-minute", "5s"}, io.Discard)
	assert.ErrorContains(t, err, "-omb-minute: needs -workload")
}

func TestWorkloadPayloadFile(t *testing.T) {
	path := writeWorkload(t, ombStyle)
	// Resolved as OMB does from the current directory, else beside the
	// workload or one level up (OMB's payload/ next to workloads/).
	dir := filepath.Dir(filepath.Dir(path))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "payload"), 0o755))
	data := []byte(strings.Repeat("x", 100))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "payload", "payload-100b.data"), data, 0o644))
	cfg, err := parseFlags([]string{"-workload", path}, io.Discard)
	require.NoError(t, err)
	require.Len(t, cfg.pay.pool, 1)
	assert.Equal(t, data, cfg.pay.pool[0])

	require.NoError(t, os.WriteFile(filepath.Join(dir, "payload", "payload-100b.data"), data[:99], 0o644))
	_, err = parseFlags([]string{"-workload", path}, io.Discard)
	var we *workloadError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, "payloadFile", we.Field)
	assert.Contains(t, err.Error(), "has 99 bytes, messageSize is 100")
}

func TestWorkloadFileMissing(t *testing.T) {
	_, err := parseFlags([]string{"-workload", filepath.Join(t.TempDir(), "nope.yaml")}, io.Discard)
	assert.ErrorIs(t, err, errUsage)
	assert.True(t, errors.Is(err, errUsage))
}

func TestShippedWorkloadsParse(t *testing.T) {
	files, err := filepath.Glob("workloads/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		_, err := loadWorkload(f)
		assert.NoError(t, err, f)
	}
}
