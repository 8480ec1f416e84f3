package keyroute

import (
	"bytes"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTestedPulsarClientGoIsWhatGoModRequires(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	assert.Contains(t, string(mod), pulsarClientGoPath+" "+testedPulsarClientGo+"\n")
}

func TestPulsarVersionReadsTheBuildsDependency(t *testing.T) {
	dep := func(v string) *debug.Module { return &debug.Module{Path: pulsarClientGoPath, Version: v} }
	assert.Equal(t, "", pulsarVersion(&debug.BuildInfo{}), "a test binary lists no dependencies")
	assert.Equal(t, "v0.22.0", pulsarVersion(&debug.BuildInfo{Deps: []*debug.Module{{Path: "other", Version: "v1"}, dep("v0.22.0")}}))
	replaced := dep("v0.21.0")
	replaced.Replace = &debug.Module{Path: "../fork", Version: "(devel)"}
	assert.Equal(t, "(devel)", pulsarVersion(&debug.BuildInfo{Deps: []*debug.Module{replaced}}))
}

// The warning goes to the logger given, once per process, naming both
// versions; the tested version, or a build that lists no dependencies
// (a test binary), logs nothing.
func TestWarnPulsarVersionLogsOnce(t *testing.T) {
	for _, tc := range []struct {
		deps []*debug.Module
		want int
	}{
		{[]*debug.Module{{Path: pulsarClientGoPath, Version: "v0.22.0"}}, 1},
		{[]*debug.Module{{Path: pulsarClientGoPath, Version: testedPulsarClientGo}}, 0},
		{nil, 0},
	} {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		warnVersionOnce, readBuildInfo = sync.Once{}, func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Deps: tc.deps}, true }
		warnPulsarVersion(logger)
		warnPulsarVersion(logger)
		assert.Equal(t, tc.want, strings.Count(buf.String(), "level=WARN"), buf.String())
		if tc.want > 0 {
			assert.Contains(t, buf.String(), "pulsar_client_go=v0.22.0 tested="+testedPulsarClientGo)
		}
	}
	warnVersionOnce, readBuildInfo = sync.Once{}, debug.ReadBuildInfo
}
