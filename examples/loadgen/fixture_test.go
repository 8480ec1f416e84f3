package main

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// javaField is one line of a testdata/omb_*_fields.txt fixture.
type javaField struct{ typ, name string }

func readFixture(t *testing.T, path string) []javaField {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []javaField
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		typ, name, ok := strings.Cut(line, "\t")
		require.True(t, ok, "fixture line %q", line)
		out = append(out, javaField{typ, name})
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out)
	return out
}
