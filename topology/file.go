package topology

import (
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// WriteFile writes t as YAML to path with mode 0600 (it may carry secrets).
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
