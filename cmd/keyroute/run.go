package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/keyroute/keyroute/topology"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a cluster failed, or the topic is missing somewhere
	exitUsage   = 2 // bad command line or topology file
)

// env is what a command reads and writes, and how it reaches a cluster's
// service URL; tests replace the parts.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// probe looks topic up through a cluster's service URL (binary
	// protocol) and returns its partition count (1 for a non-partitioned
	// topic); health uses it.
	probe func(ctx context.Context, cl topology.Cluster, topic string) (int, error)
}

func newEnv(stdin io.Reader, stdout, stderr io.Writer) *env {
	return &env{stdin: stdin, stdout: stdout, stderr: stderr, probe: serviceProbe}
}

// command is one subcommand.
type command struct {
	name    string
	usage   string // the arguments after the flags
	summary string
	run     func(ctx context.Context, e *env, name string, args []string) error
}

func commands() []command {
	return []command{
		{"topics create", "TOPIC", "create a partitioned topic on every cluster", runTopicsCreate},
		{"topics describe", "TOPIC", "show the topic on every cluster: partitions, producers, subscriptions, backlog", runTopicsDescribe},
		{"topics delete", "TOPIC", "delete the topic on every cluster", runTopicsDelete},
		{"placement", "KEY...", "show the cluster and partition each key goes to", runPlacement},
		{"plan", "", "show what applying a new topology (-to) would move, before it is applied", runPlan},
		{"health", "TOPIC", "check every cluster's service and admin URL, the topic's partitions and its subscriptions' backlog", runHealth},
		{"produce", "[VALUE...]", "send messages (the VALUE arguments, or the lines of stdin)", runProduce},
		{"consume", "", "receive, print and acknowledge messages", runConsume},
	}
}

// run runs the command line args and returns the exit code.
func run(ctx context.Context, e *env, args []string) int {
	err := dispatch(ctx, e, args)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(e.stderr, "keyroute:", line)
	}
	if errors.Is(err, ErrUsage) {
		return exitUsage
	}
	return exitFailure
}

func dispatch(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		printUsage(e.stderr)
		if len(args) == 0 {
			return badUsage("command", "missing")
		}
		return flag.ErrHelp
	}
	name := args[0]
	rest := args[1:]
	if name == "topics" {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			printUsage(e.stderr)
			return badUsage("topics", "needs create, describe or delete")
		}
		name, rest = "topics "+rest[0], rest[1:]
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, e, name, rest)
		}
	}
	printUsage(e.stderr)
	return badUsage("command", "unknown command %q", name)
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `keyroute is the command line of a keyroute topology: the Pulsar clusters that
keyroute's producer and consumer use as one topic.

usage: keyroute COMMAND -topology FILE [flags] [arguments]

commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-16s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun keyroute COMMAND -h for its flags. See go doc github.com/keyroute/keyroute/cmd/keyroute.\n")
}

// common are the flags every command has.
type common struct {
	topology string
	timeout  time.Duration
	json     bool
}

// newFlags returns the command's flag set with the common flags; json
// says whether it has -json.
func newFlags(e *env, c *common, name, usage string, json bool) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: %s\n\n", strings.TrimSpace("keyroute "+name+" -topology FILE [flags] "+usage))
		fs.PrintDefaults()
	}
	fs.StringVar(&c.topology, "topology", "", "topology YAML `file` (required); KEYROUTE_CLUSTER_<NAME>_* variables override it as in the SDK")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound of each cluster's calls: connecting, lookups, admin requests, each send and acknowledgement")
	if json {
		fs.BoolVar(&c.json, "json", false, "print JSON instead of a table")
	}
	return fs
}

// parse parses args into fs and checks the common flags and the count of
// positional arguments (min, max; max < 0: no limit).
func (c *common) parse(fs *flag.FlagSet, args []string, minArgs, maxArgs int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if c.topology == "" {
		return badUsage("-topology", "required (a topology YAML file)")
	}
	if c.timeout <= 0 {
		return badUsage("-timeout", "must be > 0 (got %v)", c.timeout)
	}
	n := fs.NArg()
	if n < minArgs {
		return badUsage("arguments", "keyroute %s needs %d argument(s), got %d", fs.Name(), minArgs, n)
	}
	if maxArgs >= 0 && n > maxArgs {
		return badUsage("arguments", "unexpected %q (flags go before the arguments)", fs.Arg(maxArgs))
	}
	return nil
}

// load reads and validates the topology file, with the SDK's environment
// overrides (topology.Load applies them).
func (c *common) load() (*topology.Topology, error) {
	topo, err := topology.Load(c.topology)
	if err != nil {
		return nil, fmt.Errorf("%w: -topology %s: %v", ErrUsage, c.topology, err)
	}
	return topo, nil
}

// topicArg parses a command line whose one argument is a TOPIC, then
// loads the topology.
func (c *common) topicArg(fs *flag.FlagSet, args []string) (topicName, *topology.Topology, error) {
	if err := c.parse(fs, args, 1, 1); err != nil {
		return topicName{}, nil, err
	}
	return c.open("argument TOPIC", fs.Arg(0))
}

// open parses the topic given as what (a flag or argument), then loads the
// topology.
func (c *common) open(what, topic string) (topicName, *topology.Topology, error) {
	t, err := parseTopicName(what, topic)
	if err != nil {
		return topicName{}, nil, err
	}
	topo, err := c.load()
	return t, topo, err
}

// eachCluster runs fn for every cluster of topo in parallel, each with
// its admin API and a context bounded by timeout, and returns their
// errors in topology order (nil entries for successes).
func eachCluster(ctx context.Context, topo *topology.Topology, timeout time.Duration,
	fn func(ctx context.Context, i int, a *adminAPI) error) []error {
	errs := make([]error, len(topo.Clusters))
	var wg sync.WaitGroup
	for i, cl := range topo.Clusters {
		a, err := newAdminAPI(cl)
		if err != nil {
			errs[i] = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer a.close()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			errs[i] = fn(cctx, i, a)
		}()
	}
	wg.Wait()
	return errs
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// errText is err's text for a table or JSON field, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
