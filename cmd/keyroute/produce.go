package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/keyroute/keyroute/producer"
)

// properties is a repeatable -property k=v flag.
type properties map[string]string

func (p properties) String() string { return "" }

func (p properties) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want name=value", s)
	}
	if _, dup := p[k]; dup {
		return fmt.Errorf("%q: property %s given twice", s, k)
	}
	p[k] = v
	return nil
}

// sentLine is what produce prints for one message.
type sentLine struct {
	Key       string `json:"key"`
	Cluster   string `json:"cluster"`
	Partition int    `json:"partition"`
	ID        string `json:"id"`
}

func runProduce(ctx context.Context, e *env, name string, args []string) error {
	var c common
	props := properties{}
	fs := newFlags(e, &c, name, "[VALUE...]", true)
	topic := fs.String("topic", "", "`topic` to send to (required)")
	key := fs.String("key", "", "message key: picks the cluster and partition (empty: no key, spread)")
	sep := fs.String("key-separator", "", "split each value at the first `SEP` into key and value (a line without SEP keeps -key)")
	fs.Var(props, "property", "message property `name=value` (repeatable)")
	if err := c.parse(fs, args, 0, -1); err != nil {
		return err
	}
	if *topic == "" {
		return badUsage("-topic", "required")
	}
	t, topo, err := c.open("-topic", *topic)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	p, err := producer.New(cctx, topo, producer.Topic(t.String()))
	cancel()
	if err != nil {
		return err
	}
	var sendErr error
	sent := 0
	send := func(value string) bool {
		k := *key
		if *sep != "" {
			if before, after, ok := strings.Cut(value, *sep); ok {
				k, value = before, after
			}
		}
		msg := &producer.Message{Key: k, Value: []byte(value)}
		if len(props) > 0 {
			msg.Properties = props
		}
		sctx, cancel := context.WithTimeout(ctx, c.timeout)
		id, err := p.Send(sctx, msg)
		cancel()
		if err != nil {
			sendErr = fmt.Errorf("message %d (key %q): %w", sent+1, k, err)
			return false
		}
		sent++
		line := sentLine{Key: k, Cluster: id.Cluster, Partition: id.Partition, ID: id.String()}
		if c.json {
			err = writeJSONLine(e.stdout, line)
		} else {
			_, err = fmt.Fprintf(e.stdout, "sent key=%q to %s\n", line.Key, line.ID)
		}
		if err != nil {
			sendErr = err
			return false
		}
		return true
	}
	if fs.NArg() > 0 {
		for _, v := range fs.Args() {
			if !send(v) {
				break
			}
		}
	} else {
		sc := bufio.NewScanner(e.stdin)
		sc.Buffer(make([]byte, 64<<10), 5<<20)
		for sc.Scan() && send(sc.Text()) {
		}
		if err := sc.Err(); err != nil && sendErr == nil {
			sendErr = fmt.Errorf("read stdin: %w", err)
		}
	}
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	if err := p.Close(closeCtx); err != nil && sendErr == nil {
		sendErr = err
	}
	fmt.Fprintf(e.stderr, "keyroute: %d message(s) sent to %s\n", sent, t)
	return errors.Join(sendErr)
}
