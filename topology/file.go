package topology

import (
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// Load reads a topology from the YAML file at path, applies environment
// overrides (ApplyEnv with os.LookupEnv) and validates the result.
//
// Decoding is strict: an unknown key is an ErrUnknownField *ParseError
// naming the key and line; other decoding problems are ErrParse. Durations
// are strings with a unit ("5s", "1m30s"). A cluster without a weight key
// gets weight 1; an explicit weight of 0 or less is kept and rejected by
// Validate. Relative file paths in the topology are used as written, so
// they resolve against the process's working directory, not the YAML
// file's. On error Load returns a nil *Topology.
func Load(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	return parse(data, path)
}

// WriteFile writes t as YAML to path with mode 0600 (it may carry secrets).
// Tokens are written as they are; write t.Redacted() to share a topology.
func (t *Topology) WriteFile(path string) error {
	b, err := yaml.Marshal(t)
	if err != nil {
		return fmt.Errorf("topology: encode: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("topology: write %s: %w", path, err)
	}
	return nil
}
