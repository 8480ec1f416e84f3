package main

import (
	"bufio"
	"fmt"
	"os"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// histLog writes -histogram-file: HdrHistogram's interval log format
// (version 1.3, as pulsar-perf's --histogram-file and HdrHistogram's
// HistogramLogWriter write it), one interval histogram a second per tag,
// readable by HistogramLogProcessor and hdrhistogram-go's
// HistogramLogReader. Values are nanoseconds (so the Interval_Max column
// is in milliseconds, the format's convention). Tags: "publish"
// (send-to-ack) and "e2e" (send-to-receive, with consumers) over all
// clusters, and "publish.NAME", "e2e.NAME" per cluster. It runs on the
// ticker goroutine.
type histLog struct {
	f     *os.File
	w     *bufio.Writer
	lw    *hdr.HistogramLogWriter
	rec   *recorder
	names []string
	last  time.Time
	e2e   bool
	err   error // the first write error
}

func openHistLog(path string, rec *recorder, names []string, e2e bool, start time.Time) (*histLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	l := &histLog{f: f, w: bufio.NewWriter(f), rec: rec, names: names, last: start, e2e: e2e}
	l.lw = hdr.NewHistogramLogWriter(l.w)
	ms := start.UnixMilli()
	l.lw.SetBaseTime(ms)
	for _, err := range []error{
		l.lw.OutputLogFormatVersion(),
		l.lw.OutputComment(fmt.Sprintf("[keyroute loadgen: values in nanoseconds; tags publish, e2e, publish.CLUSTER, e2e.CLUSTER for %v]", names)),
		l.lw.OutputStartTime(ms),
		l.lw.OutputBaseTime(ms),
		l.lw.OutputLegend(),
	} {
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	return l, nil
}

// tick logs the second the recorder has just closed (drive's onTick; the
// recorder keeps per-cluster seconds: keepPerCluster).
func (l *histLog) tick(now time.Time) {
	out := func(tag string, h *hdr.Histogram) {
		if l.err != nil {
			return
		}
		ns := toNanos(h)
		ns.SetTag(tag)
		ns.SetStartTimeMs(l.last.UnixMilli())
		ns.SetEndTimeMs(now.UnixMilli())
		l.err = l.lw.OutputIntervalHistogram(ns)
	}
	out("publish", l.rec.allSec)
	if l.e2e {
		out("e2e", l.rec.allE2ESec)
	}
	for i, name := range l.names {
		out("publish."+name, l.rec.clusterSec[i])
		if l.e2e {
			out("e2e."+name, l.rec.clusterE2ESec[i])
		}
	}
	l.last = now
}

// close flushes and closes the file; it returns the first error.
func (l *histLog) close() error {
	if err := l.w.Flush(); err != nil && l.err == nil {
		l.err = err
	}
	if err := l.f.Close(); err != nil && l.err == nil {
		l.err = err
	}
	return l.err
}

// toNanos copies a microsecond histogram into a nanosecond one, each
// value at the middle of its bucket.
func toNanos(us *hdr.Histogram) *hdr.Histogram {
	ns := hdr.New(1000, histMaxUs*1000, histDigits)
	for _, b := range us.Distribution() {
		if b.Count > 0 {
			_ = ns.RecordValues((b.From+b.To)*500, b.Count)
		}
	}
	return ns
}
