package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// createResult is one cluster's outcome of topics create.
type createResult struct {
	Cluster    string `json:"cluster"`
	Partitions int    `json:"partitions"`
	// Result is "created", "exists" (with the same partition count) or
	// "failed".
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

func runTopicsCreate(ctx context.Context, e *env, name string, args []string) error {
	var c common
	var parts partitionSpec
	fs := newFlags(e, &c, name, "TOPIC", true)
	fs.Var(&parts, "partitions", "partitions `N` on every cluster, or per cluster: east=3,west=6 (a bare N is the default of the clusters not named)")
	t, topo, err := c.topicArg(fs, args)
	if err != nil {
		return err
	}
	if !parts.given() {
		return badUsage("-partitions", "required (at least 1)")
	}
	counts, err := parts.counts("-partitions", topo)
	if err != nil {
		return err
	}
	res := make([]createResult, len(topo.Clusters))
	errs := eachCluster(ctx, topo, c.timeout, func(ctx context.Context, i int, a *adminAPI) error {
		created, err := a.create(ctx, t, counts[i])
		res[i].Result = map[bool]string{true: "created", false: "exists"}[created]
		return err
	})
	for i, cl := range topo.Clusters {
		res[i].Cluster, res[i].Partitions = cl.Name, counts[i]
		if errs[i] != nil {
			res[i].Result, res[i].Error = "failed", errs[i].Error()
		}
	}
	if c.json {
		if err := writeJSON(e.stdout, res); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "CLUSTER\tPARTITIONS\tRESULT\n")
		for _, r := range res {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", r.Cluster, r.Partitions, r.Result)
		}
		tw.Flush()
	}
	return errors.Join(errs...)
}

// describeResult is one cluster's view of a topic.
type describeResult struct {
	Cluster       string            `json:"cluster"`
	Exists        bool              `json:"exists"`
	Partitions    int               `json:"partitions"` // 0: non-partitioned
	Producers     int               `json:"producers"`
	MsgIn         int64             `json:"msgIn"`
	StorageBytes  int64             `json:"storageBytes"`
	Subscriptions []subscriptionRow `json:"subscriptions"`
	Error         string            `json:"error,omitempty"`
}

// subscriptionRow is one subscription of a topic on one cluster.
type subscriptionRow struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Consumers int    `json:"consumers"`
	Backlog   int64  `json:"backlog"`
}

// subscriptionRows returns s's subscriptions sorted by name.
func subscriptionRows(s topicStats) []subscriptionRow {
	rows := make([]subscriptionRow, 0, len(s.Subscriptions))
	for name, sub := range s.Subscriptions {
		rows = append(rows, subscriptionRow{Name: name, Type: sub.Type, Consumers: len(sub.Consumers), Backlog: sub.MsgBacklog})
	}
	slices.SortFunc(rows, func(a, b subscriptionRow) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return rows
}

func runTopicsDescribe(ctx context.Context, e *env, name string, args []string) error {
	var c common
	fs := newFlags(e, &c, name, "TOPIC", true)
	t, topo, err := c.topicArg(fs, args)
	if err != nil {
		return err
	}
	res := make([]describeResult, len(topo.Clusters))
	errs := eachCluster(ctx, topo, c.timeout, func(ctx context.Context, i int, a *adminAPI) error {
		m, err := a.meta(ctx, t)
		if err != nil {
			return err
		}
		if !m.exists {
			return a.fail("describe", fmt.Errorf("%w: %s", ErrTopicNotFound, t))
		}
		res[i].Exists, res[i].Partitions = true, m.partitions
		s, err := a.stats(ctx, t, m)
		if err != nil {
			return err
		}
		res[i].Producers, res[i].MsgIn, res[i].StorageBytes = len(s.Publishers), s.MsgInCounter, s.StorageSize
		res[i].Subscriptions = subscriptionRows(s)
		return nil
	})
	for i, cl := range topo.Clusters {
		res[i].Cluster = cl.Name
		res[i].Error = errText(errs[i])
		if res[i].Subscriptions == nil {
			res[i].Subscriptions = []subscriptionRow{}
		}
	}
	if c.json {
		if err := writeJSON(e.stdout, res); err != nil {
			return err
		}
	} else {
		printDescribe(e.stdout, t, res)
	}
	return errors.Join(errs...)
}

func printDescribe(w io.Writer, t topicName, res []describeResult) {
	fmt.Fprintf(w, "topic %s\n", t)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CLUSTER\tPARTITIONS\tPRODUCERS\tMSG IN\tSTORAGE BYTES\tSUBSCRIPTION\tTYPE\tCONSUMERS\tBACKLOG\n")
	for _, r := range res {
		if r.Error != "" { // the error itself goes to stderr
			parts := "-"
			if r.Exists {
				parts = partitionsText(r.Partitions)
			}
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t(failed: see below)\t\t\t\n", r.Cluster, parts)
			continue
		}
		lead := fmt.Sprintf("%s\t%s\t%d\t%d\t%d", r.Cluster, partitionsText(r.Partitions), r.Producers, r.MsgIn, r.StorageBytes)
		if len(r.Subscriptions) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\n", lead)
		}
		for _, s := range r.Subscriptions {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", lead, s.Name, s.Type, s.Consumers, s.Backlog)
		}
	}
	tw.Flush()
}

// partitionsText shows 0 partitions as what it means.
func partitionsText(n int) string {
	if n == 0 {
		return "non-partitioned"
	}
	return fmt.Sprint(n)
}

// deleteResult is one cluster's outcome of topics delete.
type deleteResult struct {
	Cluster string `json:"cluster"`
	// Result is "deleted", "not found" or "failed".
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

func runTopicsDelete(ctx context.Context, e *env, name string, args []string) error {
	var c common
	fs := newFlags(e, &c, name, "TOPIC", true)
	force := fs.Bool("force", false, "disconnect the topic's producers and consumers first (without it a cluster with any connected refuses)")
	t, topo, err := c.topicArg(fs, args)
	if err != nil {
		return err
	}
	errs := eachCluster(ctx, topo, c.timeout, func(ctx context.Context, _ int, a *adminAPI) error {
		return a.remove(ctx, t, *force)
	})
	res := make([]deleteResult, len(topo.Clusters))
	for i, cl := range topo.Clusters {
		res[i] = deleteResult{Cluster: cl.Name, Result: "deleted", Error: errText(errs[i])}
		switch {
		case errors.Is(errs[i], ErrTopicNotFound):
			res[i].Result = "not found"
		case errs[i] != nil:
			res[i].Result = "failed"
		}
	}
	if c.json {
		if err := writeJSON(e.stdout, res); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "CLUSTER\tRESULT\n")
		for _, r := range res {
			fmt.Fprintf(tw, "%s\t%s\n", r.Cluster, r.Result)
		}
		tw.Flush()
	}
	return errors.Join(errs...)
}
