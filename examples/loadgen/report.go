package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// settings is the run's configuration as written to the JSON results.
type settings struct {
	Clusters         []string `json:"clusters"`
	LocalClusters    bool     `json:"localClusters"` // started by loadgen (internal/testbed)
	Topic            string   `json:"topic"`
	Partitions       []int    `json:"partitions"` // per cluster, as the producer found them
	Mode             string   `json:"mode"`
	Senders          int      `json:"senders"`
	Rate             float64  `json:"rate"` // msg/s, 0 = unlimited
	Size             int      `json:"size"`
	Keys             int      `json:"keys"`
	KeyDist          string   `json:"keyDist"`
	ZipfS            float64  `json:"zipfS,omitempty"`
	Seed             uint64   `json:"seed"`
	Duration         string   `json:"duration"`
	Warmup           string   `json:"warmup"`
	Batching         bool     `json:"batching"`
	BatchMaxMessages int      `json:"batchMaxMessages"`
	Linger           string   `json:"linger"`
	Compression      string   `json:"compression"`
	MaxPending       int      `json:"maxPending"`
	MemoryLimit      int64    `json:"memoryLimit"`
	SendTimeout      string   `json:"sendTimeout"`
	TxnSize          int      `json:"txnSize"`
	Intended         bool     `json:"latencyFromIntendedTime"`

	Topics            []string `json:"topics"`
	ProducersPerTopic int      `json:"producersPerTopic"`
	Subscriptions     int      `json:"subscriptions"` // per topic
	ConsumersPerSub   int      `json:"consumersPerSubscription,omitempty"`
	SubType           string   `json:"subscriptionType,omitempty"`
	EndToEndFrom      string   `json:"endToEndFrom,omitempty"` // "payload" (send time stamped) or "publishTime"
	Payloads          string   `json:"payloads"`
	NumMessages       int64    `json:"numMessages,omitempty"`
	Workload          string   `json:"workload,omitempty"`  // -workload file
	OMBMinute         string   `json:"ombMinute,omitempty"` // with -workload
}

func settingsOf(c *config, clusters []string, partitions []int, local bool, topics ...string) settings {
	s := settings{
		Clusters: clusters, LocalClusters: local, Topic: c.topic, Partitions: partitions,
		Mode: c.mode, Senders: c.senders, Rate: c.rate, Size: c.size, Keys: c.keys, KeyDist: c.keyDist,
		Seed: c.seed, Duration: c.duration.String(), Warmup: c.warmup.String(), Batching: c.batching,
		BatchMaxMessages: c.batchMaxMessages, Linger: c.linger.String(), Compression: c.codec.String(),
		MaxPending: c.maxPending, MemoryLimit: int64(c.memoryLimit), SendTimeout: c.sendTimeout.String(),
		TxnSize: c.txnSize, Intended: c.intended,
	}
	if c.keyDist == "zipf" {
		s.ZipfS = c.zipfS
	}
	s.Topics, s.ProducersPerTopic, s.Subscriptions, s.NumMessages = topics, c.producersPerTopic, c.subscriptions, c.numMessages
	if len(topics) == 0 {
		s.Topics = []string{c.topic}
	}
	if c.untilN {
		s.Duration = "until -n"
	}
	if c.pay != nil {
		s.Payloads = c.pay.desc
	}
	if c.subscriptions > 0 {
		s.ConsumersPerSub, s.SubType, s.EndToEndFrom = c.consumers, c.subType, "publishTime"
		if c.pay != nil && c.pay.stamp {
			s.EndToEndFrom = "payload"
		}
	}
	if c.wl != nil {
		s.Workload, s.OMBMinute = c.workloadPath, c.ombMinute.String()
	}
	return s
}

// results is everything a run reports; -json writes it.
type results struct {
	Settings      settings   `json:"settings"`
	Started       time.Time  `json:"started"`
	WindowSeconds float64    `json:"windowSeconds"` // the measured window
	Interrupted   bool       `json:"interrupted"`
	Overall       summary    `json:"overall"`
	Clusters      []summary  `json:"clusters"`
	Accounting    accounting `json:"accounting"` // whole run, warm-up included
	Series        []second   `json:"series"`     // per second, warm-up included
	Compare       *compare   `json:"compareRaw,omitempty"`

	omb     *ombResult // -omb-json / -workload: written to ombPath
	ombPath string
}

// printTable writes the final table: one row per cluster, then the total,
// then the accounting line.
func printTable(w io.Writer, r *results) {
	mode := r.Settings.Mode + " mode"
	if r.Settings.TxnSize > 0 {
		mode = fmt.Sprintf("transactions of %d", r.Settings.TxnSize)
	}
	fmt.Fprintf(w, "\nloadgen: %s, %d B messages, %d keys (%s), %s, %d sender(s), rate %s, %s measured after %s warm-up%s\n",
		strings.Join(r.Settings.Clusters, " "), r.Settings.Size, r.Settings.Keys, r.Settings.KeyDist,
		mode, r.Settings.Senders, rateText(r.Settings.Rate),
		time.Duration(r.WindowSeconds*float64(time.Second)).Round(time.Millisecond), r.Settings.Warmup,
		map[bool]string{true: " (INTERRUPTED)", false: ""}[r.Interrupted])
	printSummaries(w, r.Clusters, r.Overall)
	a := r.Accounting
	verdict := "OK"
	if !a.Balanced {
		verdict = fmt.Sprintf("MISMATCH: %s unaccounted", commas(a.Sent-a.Acked-a.Failed))
	}
	fmt.Fprintf(w, "accounting: sent %s = acked %s + failed %s: %s\n", commas(a.Sent), commas(a.Acked), commas(a.Failed), verdict)
	if c := a.Consumed; c != nil {
		fmt.Fprintf(w, "\nend to end (send -> receive, from %s), %d subscription(s) x %d consumer(s), %s:\n",
			map[bool]string{true: "the payload's send time", false: "the publish time"}[r.Settings.EndToEndFrom == "payload"],
			r.Settings.Subscriptions, r.Settings.ConsumersPerSub, r.Settings.SubType)
		printEndToEnd(w, r.Clusters, r.Overall)
		verdict := "OK"
		switch {
		case !c.Complete:
			verdict = fmt.Sprintf("MISSING %s", commas(c.Missing))
			for _, pc := range c.PerCluster {
				if pc.Received < pc.Expected {
					verdict += fmt.Sprintf(" (%s: %s of %s)", pc.Cluster, commas(pc.Received), commas(pc.Expected))
				}
			}
		case c.Extra > 0:
			verdict = fmt.Sprintf("OK, %s extra (%s redelivered)", commas(c.Extra), commas(c.Redelivered))
		}
		fmt.Fprintf(w, "consumed: received %s = %d subscription(s) x acked %s: %s\n", commas(c.Received), c.Subscriptions, commas(a.Acked), verdict)
	}
	printErrorKinds(w, r.Clusters)
}

// printEndToEnd writes the end-to-end table: per cluster, then the total.
func printEndToEnd(w io.Writer, per []summary, total summary) {
	width := len("cluster")
	for _, s := range per {
		width = max(width, len(s.Cluster))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\treceived\tmsg/s\tp50 ms\tp95 ms\tp99 ms\tp99.9 ms\tmax ms\t\n", width, "cluster")
	row := func(s summary) {
		e := s.EndToEnd
		if e == nil {
			e = &latency{}
		}
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", width, s.Cluster, commas(s.Received),
			commas(int64(s.RecvPerSec+0.5)), e.P50, e.P95, e.P99, e.P999, e.Max)
	}
	for _, s := range per {
		row(s)
	}
	row(total)
	tw.Flush()
}

func rateText(r float64) string {
	if r == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%s msg/s", commas(int64(r)))
}

// printSummaries writes the table of per-cluster rows and the total row.
func printSummaries(w io.Writer, per []summary, total summary) {
	// Numbers align right; names are padded so that they align left.
	width := len("cluster")
	for _, s := range per {
		width = max(width, len(s.Cluster))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tmessages\tmsg/s\tMB/s\terrors\tp50 ms\tp95 ms\tp99 ms\tp99.9 ms\tmax ms\t\n", width, "cluster")
	row := func(s summary) {
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%.2f\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", width, s.Cluster, commas(s.Messages),
			commas(int64(s.MsgPerSec+0.5)), s.MBPerSec, commas(s.Errors),
			s.Latency.P50, s.Latency.P95, s.Latency.P99, s.Latency.P999, s.Latency.Max)
	}
	for _, s := range per {
		row(s)
	}
	row(total)
	tw.Flush()
}

// printErrorKinds lists the distinct errors seen, most frequent first.
func printErrorKinds(w io.Writer, per []summary) {
	type kind struct {
		cluster, text string
		n             int64
	}
	var kinds []kind
	for _, s := range per {
		for t, n := range s.ErrorKind {
			kinds = append(kinds, kind{s.Cluster, t, n})
		}
	}
	if len(kinds) == 0 {
		return
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].n > kinds[j].n })
	fmt.Fprintln(w, "errors:")
	for i, k := range kinds {
		if i == 10 {
			fmt.Fprintf(w, "  ... %d more kinds\n", len(kinds)-10)
			break
		}
		fmt.Fprintf(w, "  %s x%s: %s\n", k.cluster, commas(k.n), k.text)
	}
}

// writeJSON writes r to path, indented.
func writeJSON(path string, r *results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
