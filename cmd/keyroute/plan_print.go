package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// print writes p for a reader: the clusters to connect, drain, reweight
// and reconnect, the slots and keys that move, the growth, and the most
// markers. keysFile is the -keys file, "" without one.
func (p plan) print(w io.Writer, keysFile string) error {
	var cl []string
	if len(p.Connect) > 0 {
		cl = append(cl, "connect "+strings.Join(p.Connect, ", "))
	}
	if len(p.Drain) > 0 {
		cl = append(cl, "drain "+strings.Join(p.Drain, ", "))
	}
	for _, r := range p.Reweight {
		cl = append(cl, fmt.Sprintf("reweight %s %g -> %g", r.Cluster, r.From, r.To))
	}
	for _, r := range p.Reconnect {
		cl = append(cl, fmt.Sprintf("reconnect %s (%s changes: %d slots handed to the new connection, not moved)", r.Cluster, r.Field, r.Slots))
	}
	if len(cl) == 0 {
		cl = append(cl, "none to connect, drain, reweight or reconnect")
	}
	fmt.Fprintf(w, "clusters: %s\n", strings.Join(cl, "; "))

	withKeys := p.Keys != nil
	fmt.Fprintf(w, "keys moved: %s", percent(p.Share, p.Tolerance))
	if withKeys {
		fmt.Fprintf(w, "; of the %d keys in %s: %d", *p.Keys, keysFile, *p.KeysMoved)
	}
	fmt.Fprintf(w, "\nslots moved: %d of %d", p.SlotsMoved, p.Slots)
	if len(p.Reconnect) > 0 {
		fmt.Fprint(w, " (with those handed to a new connection, as Update counts them)")
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(p.Moves) > 0 {
		fmt.Fprintf(tw, "\nFROM\tTO\tSLOTS\tKEYS\t%s\n", keysHeader(withKeys))
		for _, m := range p.Moves {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", m.From, m.To, m.Slots, percent(m.Share, 0), count(m.Keys))
		}
	}
	if len(p.Growth) > 0 {
		fmt.Fprintf(tw, "\nGROWN\tPARTITIONS\tITS KEYS MOVED\tOF ALL KEYS\t%s\n", keysHeader(withKeys))
		for _, g := range p.Growth {
			fmt.Fprintf(tw, "%s\t%d -> %d\t%s\t%s\t%s\n", g.Cluster, g.PartitionsBefore, g.PartitionsAfter,
				percent(g.Share, g.Tolerance), percent(g.ShareOfAll, 0), count(g.Keys))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(p.Moves) > 0 || len(p.Growth) > 0 {
		fmt.Fprintln(w)
	}
	if p.Markers == 0 {
		_, err := fmt.Fprintln(w, "markers: none (no key leaves a partition)")
		return err
	}
	_, err := fmt.Fprintf(w, "markers: at most %d, one on each partition of a cluster that keys leave (a producer writes one only on a partition it has written to, HANDOVER.md 7.6)\n", p.Markers)
	return err
}

// percent formats a share, with its tolerance when there is one.
func percent(share, tol float64) string {
	s := strconv.FormatFloat(100*share, 'f', 2, 64) + "%"
	if tol > 0 {
		s += " ±" + strconv.FormatFloat(100*tol, 'f', 2, 64) + "%"
	}
	return s
}

// keysHeader is the header of the -keys column, "" without -keys.
func keysHeader(withKeys bool) string {
	if withKeys {
		return "IN -keys"
	}
	return ""
}

// count formats a -keys count, "" when there is none.
func count(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}
