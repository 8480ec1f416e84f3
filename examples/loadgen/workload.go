package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// workload is an OpenMessaging Benchmark (OMB) workload file: the fields
// and defaults of OMB's io.openmessaging.benchmark.Workload (checked
// against openmessaging/benchmark at commit 8559989, benchmark-framework/
// src/main/java/io/openmessaging/benchmark/Workload.java). loadgen reads
// the same files with three differences, each an error where OMB would
// go on quietly: an unknown field (OMB ignores it), an unknown
// keyDistributor (OMB falls back to NO_KEY) and consumerBacklogSizeGB > 0
// (OMB builds and drains a backlog; loadgen does not).
type workload struct {
	Name                      string  `yaml:"name"`
	Topics                    int     `yaml:"topics"`
	PartitionsPerTopic        int     `yaml:"partitionsPerTopic"`
	KeyDistributor            string  `yaml:"keyDistributor"`
	MessageSize               int     `yaml:"messageSize"`
	UseRandomizedPayloads     bool    `yaml:"useRandomizedPayloads"`
	RandomBytesRatio          float64 `yaml:"randomBytesRatio"`
	RandomizedPayloadPoolSize int     `yaml:"randomizedPayloadPoolSize"`
	PayloadFile               string  `yaml:"payloadFile"`
	SubscriptionsPerTopic     int     `yaml:"subscriptionsPerTopic"`
	ProducersPerTopic         int     `yaml:"producersPerTopic"`
	ConsumerPerSubscription   int     `yaml:"consumerPerSubscription"`
	ProducerRate              int     `yaml:"producerRate"`
	ConsumerBacklogSizeGB     int64   `yaml:"consumerBacklogSizeGB"`
	BacklogDrainRatio         float64 `yaml:"backlogDrainRatio"`
	TestDurationMinutes       int     `yaml:"testDurationMinutes"`
	WarmupDurationMinutes     int     `yaml:"warmupDurationMinutes"`

	path string // the file it was read from
}

// OMB's key distributors (KeyDistributorType).
const (
	keyNone       = "NO_KEY"
	keyRoundRobin = "KEY_ROUND_ROBIN"
	keyRandomNano = "RANDOM_NANO"
)

// workloadFields lists the YAML names of workload's fields, in order.
var workloadFields = []string{"name", "topics", "partitionsPerTopic", "keyDistributor", "messageSize",
	"useRandomizedPayloads", "randomBytesRatio", "randomizedPayloadPoolSize", "payloadFile",
	"subscriptionsPerTopic", "producersPerTopic", "consumerPerSubscription", "producerRate",
	"consumerBacklogSizeGB", "backlogDrainRatio", "testDurationMinutes", "warmupDurationMinutes"}

// workloadError is a problem with one field of a workload file; it
// matches errUsage.
type workloadError struct {
	File   string
	Line   int // 0 when not known
	Field  string
	Reason string
}

func (e *workloadError) Error() string {
	at := e.File
	if e.Line > 0 {
		at = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return fmt.Sprintf("-workload %s: %s: %s", at, e.Field, e.Reason)
}

func (e *workloadError) Unwrap() error { return errUsage }

// loadWorkload reads and checks an OMB workload file.
func loadWorkload(path string) (*workload, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: -workload: %v", errUsage, err)
	}
	return parseWorkload(path, b)
}

// parseWorkload parses b, the content of the workload file path: every
// top-level field must be one of OMB's (an error names any other, with
// its line), values are checked and defaults filled in as OMB does
// (keyDistributor NO_KEY, warmupDurationMinutes 1, backlogDrainRatio 1;
// name: the file's base name, since OMB's chart script groups by it).
func parseWorkload(path string, b []byte) (*workload, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%w: -workload %s: %v", errUsage, path, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%w: -workload %s: empty file", errUsage, path)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: -workload %s: line %d: want a mapping of OMB workload fields", errUsage, path, root.Line)
	}
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if slices.Contains(workloadFields, k.Value) {
			continue
		}
		reason := "unknown field (OMB's Workload has: " + strings.Join(workloadFields, ", ") + ")"
		for _, f := range workloadFields {
			if strings.EqualFold(f, k.Value) {
				reason = fmt.Sprintf("unknown field; did you mean %q? (field names are case-sensitive)", f)
			}
		}
		errs = append(errs, &workloadError{File: path, Line: k.Line, Field: k.Value, Reason: reason})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	w := &workload{KeyDistributor: keyNone, WarmupDurationMinutes: 1, BacklogDrainRatio: 1, path: path}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(w); err != nil {
		return nil, fmt.Errorf("%w: -workload %s: %v", errUsage, path, err)
	}
	if strings.TrimSpace(w.Name) == "" {
		w.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if err := w.validate(lineOf(root)); err != nil {
		return nil, err
	}
	return w, nil
}

// lineOf returns a function giving the line of a top-level field (0 when
// the field is not in the file).
func lineOf(root *yaml.Node) func(string) int {
	return func(field string) int {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == field {
				return root.Content[i].Line
			}
		}
		return 0
	}
}

// validate checks every field and reports every problem at once.
func (w *workload) validate(line func(string) int) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &workloadError{File: w.path, Line: line(field), Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	if w.Topics < 1 || w.Topics > 1000 {
		bad("topics", "must be between 1 and 1000 (got %d)", w.Topics)
	}
	if w.PartitionsPerTopic < 1 || w.PartitionsPerTopic > 10000 {
		bad("partitionsPerTopic", "must be between 1 and 10000 (got %d)", w.PartitionsPerTopic)
	}
	switch w.KeyDistributor {
	case keyNone, keyRoundRobin, keyRandomNano:
	default:
		bad("keyDistributor", "must be NO_KEY, KEY_ROUND_ROBIN or RANDOM_NANO (got %q)", w.KeyDistributor)
	}
	if w.MessageSize < 1 || w.MessageSize > maxMessageSize {
		bad("messageSize", "must be between 1 and %d bytes (got %d)", maxMessageSize, w.MessageSize)
	}
	if w.UseRandomizedPayloads {
		if !(w.RandomBytesRatio >= 0 && w.RandomBytesRatio <= 1) {
			bad("randomBytesRatio", "must be between 0 and 1 (got %v)", w.RandomBytesRatio)
		}
		if w.RandomizedPayloadPoolSize < 1 || w.RandomizedPayloadPoolSize > 100000 {
			bad("randomizedPayloadPoolSize", "must be between 1 and 100000 with useRandomizedPayloads (got %d)", w.RandomizedPayloadPoolSize)
		}
	}
	if w.ProducersPerTopic < 1 || w.ProducersPerTopic > 1000 {
		bad("producersPerTopic", "must be between 1 and 1000 (got %d)", w.ProducersPerTopic)
	}
	if w.SubscriptionsPerTopic < 0 || w.SubscriptionsPerTopic > 100 {
		bad("subscriptionsPerTopic", "must be between 0 and 100 (got %d)", w.SubscriptionsPerTopic)
	}
	if w.SubscriptionsPerTopic > 0 && (w.ConsumerPerSubscription < 1 || w.ConsumerPerSubscription > 100) {
		bad("consumerPerSubscription", "must be between 1 and 100 when subscriptionsPerTopic > 0 (got %d)", w.ConsumerPerSubscription)
	}
	if w.ProducerRate < 0 {
		bad("producerRate", "must be >= 0 (got %d; 0 means as fast as possible)", w.ProducerRate)
	}
	if w.ConsumerBacklogSizeGB != 0 {
		bad("consumerBacklogSizeGB", "%d is not supported: loadgen does not pause its consumers to build and drain a backlog (set it to 0)", w.ConsumerBacklogSizeGB)
	}
	if !(w.BacklogDrainRatio >= 0 && w.BacklogDrainRatio <= 1) {
		bad("backlogDrainRatio", "must be between 0 and 1 (got %v)", w.BacklogDrainRatio)
	}
	if w.TestDurationMinutes < 1 {
		bad("testDurationMinutes", "must be at least 1 (got %d; OMB would run for ever with 0)", w.TestDurationMinutes)
	}
	if w.WarmupDurationMinutes < 0 {
		bad("warmupDurationMinutes", "must be >= 0 (got %d)", w.WarmupDurationMinutes)
	}
	return errors.Join(errs...)
}

// payloadPath resolves payloadFile as OMB does (relative to the current
// directory), falling back to the workload file's directory and its
// parent, so that OMB's own workloads/*.yaml find OMB's payload/ from
// anywhere.
func (w *workload) payloadPath() string {
	p := w.PayloadFile
	if filepath.IsAbs(p) {
		return p
	}
	dir := filepath.Dir(w.path)
	for _, c := range []string{p, filepath.Join(dir, p), filepath.Join(dir, "..", p)} {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return p
}

// workloadOwns maps the flags whose setting a workload file makes to the
// workload field that makes it. Giving one of them on the command line
// together with -workload is an error naming both: the file is the one
// description of the load (other flags, e.g. -topology, -batching,
// -compression, -json, -n, combine freely; -omb-minute shortens the
// workload's minutes for tests).
var workloadOwns = map[string]string{
	"size":          "messageSize",
	"rate":          "producerRate",
	"partitions":    "partitionsPerTopic",
	"key-dist":      "keyDistributor",
	"keys":          "keyDistributor (OMB's 10,000 keys)",
	"duration":      "testDurationMinutes (use -omb-minute to shorten it)",
	"warmup":        "warmupDurationMinutes (use -omb-minute to shorten it)",
	"senders":       "producersPerTopic (one sender per producer)",
	"payload-file":  "payloadFile",
	"subscriptions": "subscriptionsPerTopic",
	"consumers":     "consumerPerSubscription",
	"mode":          "(OMB sends asynchronously)",
	"txn-size":      "(OMB sends without transactions)",
	"compare-raw":   "(-compare-raw runs its own load)",
}

// applyWorkload sets the config from w. explicit holds the flags given on
// the command line.
func applyWorkload(c *config, w *workload, explicit map[string]bool) error {
	var errs []error
	for _, f := range sortedKeys(workloadOwns) {
		if explicit[f] {
			errs = append(errs, bad(f, "conflicts with -workload %s, which sets %s: drop the flag or edit the file", w.path, workloadOwns[f]))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.wl = w
	c.topics = w.Topics
	c.partitions = w.PartitionsPerTopic
	c.producersPerTopic = w.ProducersPerTopic
	c.senders = w.Topics * w.ProducersPerTopic
	c.subscriptions = w.SubscriptionsPerTopic
	c.consumers = max(w.ConsumerPerSubscription, 1)
	c.size = w.MessageSize
	c.rate = float64(w.ProducerRate)
	c.duration = time.Duration(w.TestDurationMinutes) * c.ombMinute
	c.warmup = time.Duration(w.WarmupDurationMinutes) * c.ombMinute
	c.keys = ombKeyCount
	switch w.KeyDistributor {
	case keyNone:
		c.keyDist = "none"
	case keyRoundRobin:
		c.keyDist = "round-robin"
	case keyRandomNano:
		c.keyDist = "random-nano"
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
