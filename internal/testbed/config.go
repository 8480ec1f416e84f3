package testbed

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// brokerConfig returns the settings a test-bed cluster overrides in the
// distribution's conf/standalone.conf. extra is applied last and wins.
func brokerConfig(name string, brokerPort, webPort int, extra map[string]string) map[string]string {
	kv := map[string]string{
		"clusterName":        name,
		"brokerServicePort":  strconv.Itoa(brokerPort),
		"webServicePort":     strconv.Itoa(webPort),
		"bindAddress":        "127.0.0.1",
		"advertisedAddress":  "127.0.0.1",
		"listeningInterface": "lo", // else the bookie binds 0.0.0.0
		// One bookie: defaults of 2/2/2 make ledger creation fail.
		"managedLedgerDefaultEnsembleSize": "1",
		"managedLedgerDefaultWriteQuorum":  "1",
		"managedLedgerDefaultAckQuorum":    "1",
		// Transactions for the producer's transactional mode.
		"transactionCoordinatorEnabled":             "true",
		"transactionBufferSegmentedSnapshotEnabled": "true",
		// Flush the bookie journal as soon as its queue drains instead of
		// waiting up to journalMaxGroupWaitMSec: ~4x lower send latency.
		"journalFlushWhenQueueEmpty": "true",
		// Not needed by the project; saves threads and startup time.
		"webSocketServiceEnabled": "false",
		"functionsWorkerEnabled":  "false",
	}
	maps.Copy(kv, extra)
	return kv
}

// renderConfig rewrites a Java properties file: every "key=value" line
// whose key is in kv gets the new value in place, and keys the base does
// not mention are appended in sorted order. Comments and other lines are
// kept as they are.
func renderConfig(base []byte, kv map[string]string) []byte {
	var out bytes.Buffer
	seen := make(map[string]bool, len(kv))
	sc := bufio.NewScanner(bytes.NewReader(base))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if key, ok := propertyKey(line); ok {
			if v, ok := kv[key]; ok {
				if !seen[key] {
					fmt.Fprintf(&out, "%s=%s\n", key, v)
					seen[key] = true
				}
				continue // drop duplicates of an overridden key
			}
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	var rest []string
	for k := range kv {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		out.WriteString("\n### keyroute testbed overrides\n")
		slices.Sort(rest)
		for _, k := range rest {
			fmt.Fprintf(&out, "%s=%s\n", k, kv[k])
		}
	}
	return out.Bytes()
}

// propertyKey returns the key of a "key=value" properties line.
func propertyKey(line string) (string, bool) {
	s := strings.TrimSpace(line)
	if s == "" || s[0] == '#' || s[0] == '!' {
		return "", false
	}
	i := strings.IndexAny(s, "=:")
	if i <= 0 {
		return "", false
	}
	return strings.TrimSpace(s[:i]), true
}
