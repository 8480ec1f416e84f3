package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/keyroute/keyroute/consumer"
)

// received is what consume prints for one message.
type received struct {
	Cluster     string            `json:"cluster"`
	Partition   int               `json:"partition"`
	Key         string            `json:"key"`
	Value       string            `json:"value"`
	NullValue   bool              `json:"nullValue,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	PublishTime time.Time         `json:"publishTime"`
	ID          string            `json:"id"`
}

var subTypes = map[string]consumer.SubscriptionType{
	"exclusive":  consumer.Exclusive,
	"failover":   consumer.Failover,
	"shared":     consumer.Shared,
	"key_shared": consumer.KeyShared,
}

var positions = map[string]consumer.Position{"latest": consumer.Latest, "earliest": consumer.Earliest}

func runConsume(ctx context.Context, e *env, name string, args []string) error {
	var c common
	fs := newFlags(e, &c, name, "", true)
	topic := fs.String("topic", "", "`topic` to read (required)")
	sub := fs.String("subscription", "", "subscription `name` on every cluster (required; it stays on the clusters after the command)")
	typ := fs.String("type", "exclusive", "subscription type: exclusive, failover, shared or key_shared")
	pos := fs.String("position", "latest", "where a new subscription starts: latest or earliest")
	n := fs.Int("n", 0, "stop after this many messages (0: no limit)")
	wait := fs.Duration("wait", 0, "stop when no message came for this long (0: wait until interrupted)")
	if err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	var errs []error
	if *topic == "" {
		errs = append(errs, badUsage("-topic", "required"))
	}
	if *sub == "" {
		errs = append(errs, badUsage("-subscription", "required"))
	}
	st, ok := subTypes[*typ]
	if !ok {
		errs = append(errs, badUsage("-type", "must be exclusive, failover, shared or key_shared (got %q)", *typ))
	}
	p, ok := positions[*pos]
	if !ok {
		errs = append(errs, badUsage("-position", "must be latest or earliest (got %q)", *pos))
	}
	if *n < 0 {
		errs = append(errs, badUsage("-n", "must be >= 0 (got %d)", *n))
	}
	if *wait < 0 {
		errs = append(errs, badUsage("-wait", "must be >= 0 (got %v)", *wait))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	t, topo, err := c.open("-topic", *topic)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	cons, err := consumer.New(cctx, topo, consumer.Topic(t.String()), consumer.Subscription(*sub),
		consumer.Type(st), consumer.InitialPosition(p))
	cancel()
	if err != nil {
		return err
	}
	got, err := receiveLoop(ctx, e.stdout, cons, c.json, *n, *wait, c.timeout)
	closeCtx, cancelClose := context.WithTimeout(context.Background(), c.timeout)
	if cerr := cons.Close(closeCtx); err == nil {
		err = cerr
	}
	cancelClose()
	fmt.Fprintf(e.stderr, "keyroute: %d message(s) received and acknowledged\n", got)
	return err
}

// receiveLoop prints and acknowledges messages until n were received (n >
// 0), none came for wait (wait > 0), or ctx ends (an interrupt: not an
// error).
func receiveLoop(ctx context.Context, w io.Writer, cons *consumer.Consumer, asJSON bool, n int, wait, ackTimeout time.Duration) (int, error) {
	got := 0
	for n == 0 || got < n {
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if wait > 0 {
			rctx, cancel = context.WithTimeout(ctx, wait)
		}
		m, err := cons.Receive(rctx)
		idle := rctx.Err() != nil && ctx.Err() == nil
		cancel()
		switch {
		case err != nil && (ctx.Err() != nil || idle):
			return got, nil
		case err != nil:
			return got, err
		}
		if err := printMessage(w, m, asJSON); err != nil {
			return got, err
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
		err = cons.Ack(actx, m)
		cancel()
		if err != nil {
			return got, fmt.Errorf("ack %s: %w", m.ID, err)
		}
		got++
	}
	return got, nil
}

func printMessage(w io.Writer, m *consumer.Message, asJSON bool) error {
	r := received{Cluster: m.ID.Cluster, Partition: m.ID.Partition, Key: m.Key, Value: string(m.Value),
		NullValue: m.NullValue, Properties: m.Properties, PublishTime: m.PublishTime, ID: m.ID.String()}
	if asJSON {
		return writeJSONLine(w, r)
	}
	value := fmt.Sprintf("%q", r.Value)
	if r.NullValue {
		value = "null"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%d key=%q value=%s", r.Cluster, r.Partition, r.Key, value)
	names := make([]string, 0, len(r.Properties))
	for k := range r.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fmt.Fprintf(&b, " %s=%q", k, r.Properties[k])
	}
	_, err := fmt.Fprintln(w, b.String())
	return err
}

// writeJSONLine prints v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
