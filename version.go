package keyroute

import (
	"log/slog"
	"runtime/debug"
	"sync"
)

// testedPulsarClientGo is the pulsar-client-go version the SDK is tested
// against and whose behaviour beyond its documented API it relies on
// (producer/internals.go, consumer/internals.go). The SDK's go.mod
// requires it, but an importer's build may select a newer one.
const testedPulsarClientGo = "v0.21.0"

const pulsarClientGoPath = "github.com/apache/pulsar-client-go"

var (
	warnVersionOnce sync.Once
	readBuildInfo   = debug.ReadBuildInfo // tests replace it
)

// warnPulsarVersion logs once per process, at Warn, when the build runs
// another pulsar-client-go than testedPulsarClientGo: to logger, or to
// slog's default logger without one, since this is the one message a
// service should see even when it gave keyroute no logger. It warns and
// does not refuse: Go's minimal version selection can pick a newer
// version for another dependency's sake, and refusing to start would
// leave the importer no way out but a fork.
func warnPulsarVersion(logger *slog.Logger) {
	warnVersionOnce.Do(func() {
		info, ok := readBuildInfo()
		if !ok {
			return
		}
		if got := pulsarVersion(info); got != "" && got != testedPulsarClientGo {
			if logger == nil {
				logger = slog.Default()
			}
			logger.Warn("keyroute: the build uses another pulsar-client-go than keyroute was tested against: "+
				"its outcome reporting and ordering rely on that version's behaviour",
				"pulsar_client_go", got, "tested", testedPulsarClientGo)
		}
	})
}

// pulsarVersion returns the pulsar-client-go version info lists (its
// replacement's, when replaced), or "" when it lists none, as in a test
// binary.
func pulsarVersion(info *debug.BuildInfo) string {
	for _, d := range info.Deps {
		if d.Path != pulsarClientGoPath {
			continue
		}
		if d.Replace != nil {
			d = d.Replace
		}
		return d.Version
	}
	return ""
}
