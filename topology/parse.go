package topology

import (
	"bytes"
	"errors"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Parse decodes a topology from YAML, then applies environment overrides
// (ApplyEnv with os.LookupEnv), then validates it. See Load for the rules.
func Parse(data []byte) (*Topology, error) {
	return parse(data, "")
}

// parse is Parse with the source file named in errors.
func parse(data []byte, source string) (*Topology, error) {
	t, err := decode(data, source)
	if err != nil {
		return nil, err
	}
	t.ApplyEnv(os.LookupEnv)
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// decode strictly decodes the single YAML document in data and gives
// clusters without a weight key a weight of 1.
func decode(data []byte, source string) (*Topology, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var t Topology
	if err := dec.Decode(&t); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(err, source)
	} else if err == nil {
		var extra yaml.Node
		if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
			return nil, errors.Join(&ParseError{Source: source, Reason: "more than one YAML document", Err: ErrParse})
		}
	}

	// yaml.v3 cannot tell an omitted weight from "weight: 0", so decode
	// the weights again as pointers.
	var weights struct {
		Clusters []struct {
			Weight *float64 `yaml:"weight"`
		} `yaml:"clusters"`
	}
	if err := yaml.Unmarshal(data, &weights); err == nil && len(weights.Clusters) == len(t.Clusters) {
		for i, w := range weights.Clusters {
			if w.Weight == nil {
				t.Clusters[i].Weight = 1
			}
		}
	}
	return &t, nil
}

var (
	// yaml.v3 messages, one per problem.
	reLine         = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	reUnknownField = regexp.MustCompile(`^field (.+) not found in type (\S+)$`)
	// yaml.v3 quotes scalars in backquotes; one may be a secret under the
	// wrong key.
	reScalar = regexp.MustCompile(" ?`.*`")
)

// yamlTypes maps the Go types in yaml.v3 messages to YAML paths.
var yamlTypes = map[string]string{
	"topology.Topology":       "the top level",
	"topology.Cluster":        "a cluster",
	"topology.Auth":           "auth",
	"topology.TLS":            "tls",
	"topology.ClientSettings": "client",
}

// yamlError converts a yaml.v3 error into ParseErrors, dropping any scalar
// value it quotes.
func yamlError(err error, source string) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	errs := make([]error, 0, len(msgs))
	for _, m := range msgs {
		pe := &ParseError{Source: source, Reason: strings.TrimPrefix(m, "yaml: "), Err: ErrParse}
		if sub := reLine.FindStringSubmatch(m); sub != nil {
			pe.Line, _ = strconv.Atoi(sub[1])
			pe.Reason = sub[2]
		}
		if sub := reUnknownField.FindStringSubmatch(pe.Reason); sub != nil {
			where, ok := yamlTypes[sub[2]]
			if !ok {
				where = sub[2]
			}
			pe.Field, pe.Err = sub[1], ErrUnknownField
			pe.Reason = strconv.Quote(sub[1]) + " in " + where
		} else {
			pe.Reason = reScalar.ReplaceAllString(pe.Reason, "")
		}
		errs = append(errs, pe)
	}
	return errors.Join(errs...)
}
