package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/keyroute/keyroute/topology"
)

// fence waits until no open Pulsar transaction holds an acknowledgement of
// the subscription, on every partition of the input topic on every
// cluster, and returns how many did when it started (summed over the
// partitions: one transaction holding acks on two partitions counts twice).
//
// A processor that was killed inside a commit leaves its transaction open
// until the broker aborts it at its timeout. Meanwhile the messages it
// acknowledged in that transaction are held: a successor that subscribes
// now is not given them, takes the key's later messages first, and gets
// the held ones only after the abort, out of their key's order. Waiting
// for the open transactions to end first keeps each key in order.
func fence(ctx context.Context, topo *topology.Topology, cfg config) (int64, error) {
	first := int64(-1)
	for {
		var held int64
		for _, cl := range topo.Clusters {
			hc, err := cl.AdminClient()
			if err != nil {
				return 0, fmt.Errorf("fence: %s: %w", cl.Name, err)
			}
			for i := range cfg.partitions {
				n, err := ongoingAcks(ctx, hc, cl.AdminURL, fmt.Sprintf("%s-partition-%d", cfg.in, i), cfg.sub)
				if err != nil {
					return 0, fmt.Errorf("fence: %s: %w", cl.Name, err)
				}
				held += n
			}
		}
		if first < 0 {
			first = held
		}
		if held == 0 {
			return first, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("fence: %d open transactions still hold acks: %w", held, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ongoingAcks returns how many open transactions hold acknowledgements of
// sub on topic (one partition), from the broker's pending-ack stats; 0
// when the subscription does not exist yet (the broker answers the stats
// of a missing subscription with an internal error).
func ongoingAcks(ctx context.Context, hc *http.Client, adminURL, topic, sub string) (int64, error) {
	local := strings.TrimPrefix(topic, "persistent://")
	var subs []string
	if err := getJSON(ctx, hc, fmt.Sprintf("%s/admin/v2/persistent/%s/subscriptions", adminURL, local), &subs); err != nil {
		return 0, err
	}
	if !slices.Contains(subs, sub) {
		return 0, nil
	}
	var st struct {
		OngoingTxnSize int64 `json:"ongoingTxnSize"`
	}
	if err := getJSON(ctx, hc, fmt.Sprintf("%s/admin/v3/transactions/pendingAckStats/%s/%s", adminURL, local, sub), &st); err != nil {
		return 0, err
	}
	return st.OngoingTxnSize, nil
}

func getJSON(ctx context.Context, hc *http.Client, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}
