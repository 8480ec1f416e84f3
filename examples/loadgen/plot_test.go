package main

import (
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

func sampleSeries(n int) []second {
	s := make([]second, n)
	for i := range s {
		s[i] = second{T: float64(i + 1), Warmup: i < 3, MsgPerSec: 100000 + float64(i%5)*20000,
			P50Ms: 2 + float64(i%3)*0.5, P99Ms: 9 + float64(i%4)}
	}
	return s
}

func decodePNG(t *testing.T, path string) image.Image {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	return img
}

// hasColour reports whether some pixel of img has exactly colour c.
func hasColour(img image.Image, c [3]uint8) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == c[0] && uint8(g>>8) == c[1] && uint8(bl>>8) == c[2] {
				return true
			}
		}
	}
	return false
}

func TestWritePlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.png")
	s := sampleSeries(25)
	for i := range s { // with consumers
		s[i].RecvPerSec, s[i].E2EP50Ms, s[i].E2EP99Ms, s[i].ClusterE2EP99 = s[i].MsgPerSec, 3, 12, []float64{12}
	}
	require.NoError(t, writePlot(path, s, "test plot"))
	img := decodePNG(t, path)
	assert.Equal(t, plotW, img.Bounds().Dx())
	assert.Equal(t, plotH, img.Bounds().Dy())
	assert.True(t, hasColour(img, [3]uint8{colWarmup.R, colWarmup.G, colWarmup.B}), "warm-up shaded")
	assert.True(t, hasColour(img, [3]uint8{colRate.R, colRate.G, colRate.B}), "throughput line drawn")
	assert.True(t, hasColour(img, [3]uint8{colE2E99.R, colE2E99.G, colE2E99.B}), "end-to-end line drawn")
}

func TestPlotWithoutWarmupHasNoShade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.png")
	s := sampleSeries(10)
	for i := range s {
		s[i].Warmup = false
	}
	require.NoError(t, writePlot(path, s, "no warm-up"))
	assert.False(t, hasColour(decodePNG(t, path), [3]uint8{colWarmup.R, colWarmup.G, colWarmup.B}))
}

func TestPlotEdgeCases(t *testing.T) {
	dir := t.TempDir()
	// No data, one point, all zeros: no panic, a valid PNG.
	for name, s := range map[string][]second{"empty": nil, "one": sampleSeries(1),
		"zeros": {{T: 1}, {T: 2}}} {
		require.NoError(t, writePlot(filepath.Join(dir, name+".png"), s, name), name)
	}
	assert.Error(t, writePlot(filepath.Join(dir, "missing", "x.png"), nil, "x"))
}

func TestLatencyAxisIgnoresWarmupSpikes(t *testing.T) {
	s := sampleSeries(25) // measured p99 at most 12 ms
	s[0].P99Ms = 5000     // a cold broker in the warm-up
	assert.Equal(t, 20.0, latencyAxisMax(s))
	s[10].E2EP99Ms = 30 // end-to-end counts too
	assert.Equal(t, 50.0, latencyAxisMax(s))
	// Only warm-up: scaled to what there is.
	assert.Equal(t, 10000.0, latencyAxisMax(s[:3]))
	assert.Equal(t, 3.0, warmupEnd(s))
}

func TestNiceMax(t *testing.T) {
	assert.Equal(t, 1.0, niceMax(0))
	assert.Equal(t, 20.0, niceMax(12))
	assert.Equal(t, 250.0, niceMax(200))
	assert.Equal(t, 500000.0, niceMax(300000))
}
