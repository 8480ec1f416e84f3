package keyroute_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/keyroute/keyroute/topology"
)

// README.md marks the blocks these tests hold to the code with an HTML
// comment on the line before the block's opening fence.
const (
	quickStartMark = "<!-- quick start: example_quickstart_test.go, run by e2e/smoke -->"
	topologyMark   = "<!-- topology example: loaded by readme_test.go, run by e2e/smoke -->"
)

// readmeBlock returns the fenced code block that follows mark in README.md
// (without its fences), failing if there is not exactly one.
func readmeBlock(t *testing.T, mark string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	parts := strings.Split(string(readme), mark+"\n")
	require.Len(t, parts, 2, "README.md must hold %q exactly once", mark)
	rest := parts[1]
	open, body, ok := strings.Cut(rest, "\n")
	require.True(t, ok && strings.HasPrefix(open, "```"), "README.md: %q must be followed by a fenced code block, found %q", mark, open)
	body, _, ok = strings.Cut(body, "```\n")
	require.True(t, ok, "README.md: the code block after %q is not closed", mark)
	return body
}

// The quick start in README.md is example_quickstart_test.go, which this
// package compiles, shown as the program a user copies: from the package
// clause on, package main, and Example_quickStart as main.
func TestReadmeQuickStartIsTheCompiledExample(t *testing.T) {
	src, err := os.ReadFile("example_quickstart_test.go")
	require.NoError(t, err)
	_, file, ok := strings.Cut(string(src), "\npackage keyroute_test\n")
	require.True(t, ok, "example_quickstart_test.go: no package clause")
	require.Equal(t, 1, strings.Count(file, "\nfunc Example_quickStart() {\n"), "example_quickstart_test.go: Example_quickStart must be there once")
	want := "package main\n" + strings.Replace(file, "\nfunc Example_quickStart() {\n", "\nfunc main() {\n", 1)

	got := readmeBlock(t, quickStartMark)
	if got != want {
		t.Fatalf("README.md's quick start differs from example_quickstart_test.go (as a program: package main, Example_quickStart as main); first difference:\n%s\ncopy the file into README.md, or the README's change into the file", firstDiff(want, got))
	}
}

// firstDiff describes the first line where want and got differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  example: %q\n  README:  %q", i+1, wl, gl)
		}
	}
	return "(none)"
}

// The topology file in README.md loads as shown: the same decoding and
// validation as topology.Load, for plain local clusters that name no file
// (e2e/smoke runs the quick start on it).
func TestReadmeTopologyExampleLoads(t *testing.T) {
	topo, err := topology.Parse([]byte(readmeBlock(t, topologyMark)))
	require.NoError(t, err, "README.md's topology example does not validate as shown")
	for _, c := range topo.Clusters {
		require.True(t, strings.HasPrefix(c.ServiceURL, "pulsar://localhost:"), "README.md's topology example: cluster %s should be a plain local one, got %s", c.Name, c.ServiceURL)
	}
}

// The secured cluster that README.md's topology example shows commented
// out loads once uncommented: each line that begins with "#" and two
// spaces loses its "#". The files it names are made under a temporary
// directory first (their paths re-rooted there), holding the test
// certificates of package topology and a token, since Validate checks that
// they exist and are not empty.
func TestReadmeSecuredTopologyExampleLoads(t *testing.T) {
	shown := readmeBlock(t, topologyMark)
	lines := strings.Split(shown, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "#  ") {
			lines[i] = l[1:]
		}
	}
	example := strings.Join(lines, "\n")
	require.NotEqual(t, shown, example, "README.md's topology example should show a secured cluster, commented out")
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(example), &doc), "README.md's topology example, uncommented, is not YAML")

	dir := t.TempDir()
	tlsFiles := map[string]string{
		"caFile":   "topology/testdata/tls/ca.pem",
		"certFile": "topology/testdata/tls/client.pem",
		"keyFile":  "topology/testdata/tls/client-key.pem",
	}
	files := 0
	var reroot func(n *yaml.Node)
	reroot = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, val := n.Content[i].Value, n.Content[i+1]
				if strings.HasSuffix(key, "File") && val.Kind == yaml.ScalarNode {
					path := filepath.Join(dir, val.Value)
					content := []byte("example-token\n")
					if from, ok := tlsFiles[key]; ok {
						var err error
						content, err = os.ReadFile(from)
						require.NoError(t, err)
					} else {
						require.Equal(t, "tokenFile", key, "README.md's topology example: a file key this test does not know")
					}
					require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
					require.NoError(t, os.WriteFile(path, content, 0o600))
					val.Value = path
					files++
				}
			}
		}
		for _, c := range n.Content {
			reroot(c)
		}
	}
	reroot(&doc)
	require.NotZero(t, files, "README.md's topology example should show a token or TLS file")

	var rerooted bytes.Buffer
	enc := yaml.NewEncoder(&rerooted)
	require.NoError(t, enc.Encode(&doc))
	require.NoError(t, enc.Close())
	topo, err := topology.Parse(rerooted.Bytes())
	require.NoError(t, err, "README.md's topology example, uncommented, does not validate")
	require.Len(t, topo.Clusters, 2, "README.md's topology example, uncommented, should show a second cluster")
}

// README.md states the Go version that the SDK module's go directive
// requires.
func TestReadmeGoVersionIsGoMods(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindSubmatch(mod)
	require.NotNil(t, m, "go.mod has no go directive")
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	want := fmt.Sprintf("Go %s.%s or later", m[1], m[2])
	require.Contains(t, string(readme), want, "README.md should say the Go version go.mod requires")
}

// Every relative link in README.md names a file or directory of the
// repository.
func TestReadmeLinksResolve(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	links := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`).FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, links)
	for _, l := range links {
		target := l[1]
		if strings.Contains(target, "://") {
			continue
		}
		_, err := os.Stat(filepath.FromSlash(target))
		require.NoError(t, err, "README.md links to %s", target)
	}
}
