package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/topology"
)

// clusterHealth is one cluster's health for a topic.
type clusterHealth struct {
	Cluster string `json:"cluster"`
	// Healthy: the service URL answered a lookup of the topic, and the
	// admin API (when the topology gives one) answered and has it.
	Healthy bool `json:"healthy"`
	// Service is "ok" or the error of the topic lookup through the
	// service URL; ServicePartitions is the partition count it gave
	// (1 for a non-partitioned topic).
	Service           string `json:"service"`
	ServicePartitions int    `json:"servicePartitions"`
	// Admin is "ok", "no adminURL", or the error of the admin API.
	Admin string `json:"admin"`
	// Partitions is the count the admin API gave (0: non-partitioned),
	// -1 when unknown.
	Partitions    int               `json:"partitions"`
	Subscriptions []subscriptionRow `json:"subscriptions"`
}

func runHealth(ctx context.Context, e *env, name string, args []string) error {
	var c common
	fs := newFlags(e, &c, name, "TOPIC", true)
	t, topo, err := c.topicArg(fs, args)
	if err != nil {
		return err
	}
	res := make([]clusterHealth, len(topo.Clusters))
	errs := make([]error, len(topo.Clusters))
	var wg sync.WaitGroup
	for i, cl := range topo.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, c.timeout)
			defer cancel()
			res[i], errs[i] = checkCluster(cctx, e, cl, t)
		}()
	}
	wg.Wait()
	if c.json {
		if err := writeJSON(e.stdout, res); err != nil {
			return err
		}
	} else {
		printHealth(e.stdout, t, res)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w:\n%w", ErrUnhealthy, err)
	}
	return nil
}

// checkCluster looks t up through cl's service URL and admin API, in
// parallel, and returns what it found with the failures joined (each a
// *ClusterError).
func checkCluster(ctx context.Context, e *env, cl topology.Cluster, t topicName) (clusterHealth, error) {
	h := clusterHealth{Cluster: cl.Name, Service: "ok", Admin: "ok", Partitions: -1, Subscriptions: []subscriptionRow{}}
	var serviceErr, adminErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n, err := e.probe(ctx, cl, t.String())
		if err != nil {
			serviceErr = &ClusterError{Cluster: cl.Name, Op: "look the topic up through " + cl.ServiceURL, Err: err}
			h.Service = err.Error()
			return
		}
		h.ServicePartitions = n
	}()
	if cl.AdminURL == "" {
		h.Admin = "no adminURL"
	} else {
		adminErr = h.admin(ctx, cl, t)
		if adminErr != nil {
			h.Admin = adminErr.Error()
		}
	}
	wg.Wait()
	h.Healthy = serviceErr == nil && adminErr == nil
	return h, errors.Join(serviceErr, adminErr)
}

// admin fills in what cl's admin API says of t.
func (h *clusterHealth) admin(ctx context.Context, cl topology.Cluster, t topicName) error {
	a, err := newAdminAPI(cl)
	if err != nil {
		return err
	}
	defer a.close()
	m, err := a.meta(ctx, t)
	if err != nil {
		return err
	}
	if !m.exists {
		return a.fail("health", fmt.Errorf("%w: %s", ErrTopicNotFound, t))
	}
	h.Partitions = m.partitions
	s, err := a.stats(ctx, t, m)
	if err != nil {
		return err
	}
	h.Subscriptions = subscriptionRows(s)
	return nil
}

func printHealth(w io.Writer, t topicName, res []clusterHealth) {
	fmt.Fprintf(w, "topic %s\n", t)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CLUSTER\tHEALTHY\tSERVICE\tADMIN\tPARTITIONS\tSUBSCRIPTION\tCONSUMERS\tBACKLOG\n")
	for _, h := range res {
		service, admin, parts := "ok", "ok", "-"
		if h.Service != "ok" {
			service = "failed"
		}
		if h.Admin != "ok" {
			admin = "failed"
			if h.Admin == "no adminURL" {
				admin = "no adminURL"
			}
		}
		if h.Partitions >= 0 {
			parts = partitionsText(h.Partitions)
		}
		lead := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", h.Cluster, map[bool]string{true: "yes", false: "NO"}[h.Healthy], service, admin, parts)
		if len(h.Subscriptions) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\n", lead)
		}
		for _, s := range h.Subscriptions {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", lead, s.Name, s.Consumers, s.Backlog)
		}
	}
	tw.Flush()
}

// serviceProbe looks topic up through cl's service URL with a client of
// its own (the cluster's TLS and token, as the producer connects), bounded
// by ctx's deadline, and returns the partition count the broker gave (1
// for a non-partitioned topic).
func serviceProbe(ctx context.Context, cl topology.Cluster, topic string) (int, error) {
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		// A little under the deadline, so that pulsar-client-go's own
		// error (an authentication failure, say) comes back before ctx
		// ends.
		timeout = max(time.Until(d)*9/10, time.Millisecond)
	}
	client, err := keyroute.Open(cl, false, 0, nil, func(_ string, o *pulsar.ClientOptions) {
		o.OperationTimeout = timeout
		o.ConnectionTimeout = timeout
	})
	if err != nil {
		return 0, err
	}
	type answer struct {
		n   int
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer client.Close()
		parts, err := client.TopicPartitions(topic)
		done <- answer{len(parts), err}
	}()
	select {
	case a := <-done:
		return a.n, a.err
	case <-ctx.Done():
		return 0, fmt.Errorf("no answer within -timeout: %w", ctx.Err())
	}
}
