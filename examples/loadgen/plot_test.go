package main

import (
	"context"
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

func TestWritePlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.png")
	require.NoError(t, writePlot(path, sampleSeries(25), "test plot"))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Equal(t, plotW, img.Bounds().Dx())
	assert.Equal(t, plotH, img.Bounds().Dy())

	// The throughput line is drawn somewhere in its colour.
	found := false
	for y := 0; y < plotH && !found; y++ {
		for x := 0; x < plotW; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == colRate.R && uint8(g>>8) == colRate.G && uint8(b>>8) == colRate.B {
				found = true
				break
			}
		}
	}
	assert.True(t, found, "throughput line drawn")
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

func TestNiceStep(t *testing.T) {
	assert.Equal(t, 50000.0, niceStep(300000, 6))
	assert.Equal(t, 2.0, niceStep(10, 6))
	assert.Equal(t, 1.0, niceStep(0, 6))
	assert.InDelta(t, 0.5, niceStep(2.9, 6), 1e-12)
}

func TestFmtTick(t *testing.T) {
	assert.Equal(t, "150k", fmtTick(150000))
	assert.Equal(t, "1.2M", fmtTick(1.2e6))
	assert.Equal(t, "5", fmtTick(5))
	assert.Equal(t, "0.25", fmtTick(0.25))
}
