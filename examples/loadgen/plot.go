package main

import (
	"image/color"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The plot is drawn with gonum.org/v1/plot: a 1000 x 700 px PNG of two
// panels sharing the time axis, throughput above and latency below.
const (
	plotW   = 1000
	plotH   = 700
	plotDPI = 96
)

var (
	colWarmup = color.RGBA{245, 232, 200, 255}
	colRate   = color.RGBA{31, 119, 180, 255}
	colRecv   = color.RGBA{255, 127, 14, 255}
	colP50    = color.RGBA{44, 160, 44, 255}
	colP99    = color.RGBA{214, 39, 40, 255}
	colE2E50  = color.RGBA{148, 103, 189, 255}
	colE2E99  = color.RGBA{140, 86, 75, 255}
)

// writePlot draws the per-second series as a PNG: throughput (published,
// and received when consumers ran) and latency (publish p50 and p99, and
// end-to-end p50 and p99 when consumers ran). The warm-up is shaded, and
// the latency axis is scaled to the measured window: warm-up spikes (a
// cold broker, JIT compilation) run off the top instead of flattening
// the window's lines.
func writePlot(path string, series []second, title string) error {
	c, err := renderPlot(series, title)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// renderPlot draws the image.
func renderPlot(series []second, title string) (*vgimg.Canvas, error) {
	warmEnd := warmupEnd(series)
	consumed := false
	for _, s := range series {
		consumed = consumed || s.ClusterE2EP99 != nil
	}
	pick := func(f func(second) float64) plotter.XYs {
		xy := make(plotter.XYs, len(series))
		for i, s := range series {
			xy[i].X, xy[i].Y = s.T, f(s)
		}
		return xy
	}

	top := newPanel(title, "msg/s", warmEnd)
	addLine(top, "published (acked) msg/s", colRate, pick(func(s second) float64 { return s.MsgPerSec }))
	if consumed {
		addLine(top, "received msg/s", colRecv, pick(func(s second) float64 { return s.RecvPerSec }))
	}
	top.Y.Min = 0
	top.Y.Max = niceMax(maxOf(series, false, func(s second) float64 { return max(s.MsgPerSec, s.RecvPerSec) }))

	bottom := newPanel("latency per second", "ms", warmEnd)
	addLine(bottom, "publish p50", colP50, pick(func(s second) float64 { return s.P50Ms }))
	addLine(bottom, "publish p99", colP99, pick(func(s second) float64 { return s.P99Ms }))
	if consumed {
		addLine(bottom, "end-to-end p50", colE2E50, pick(func(s second) float64 { return s.E2EP50Ms }))
		addLine(bottom, "end-to-end p99", colE2E99, pick(func(s second) float64 { return s.E2EP99Ms }))
	}
	bottom.X.Label.Text = "seconds since start"
	bottom.Y.Min = 0
	bottom.Y.Max = latencyAxisMax(series)

	xMax := 1.0
	if n := len(series); n > 0 {
		xMax = math.Max(xMax, series[n-1].T)
	}
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.X.Max = 0, xMax
	}

	c := vgimg.NewWith(vgimg.UseWH(vg.Length(plotW)*vg.Inch/plotDPI, vg.Length(plotH)*vg.Inch/plotDPI), vgimg.UseDPI(plotDPI))
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 5}
	cs := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, dc)
	top.Draw(cs[0][0])
	bottom.Draw(cs[1][0])
	return c, nil
}

// newPanel returns a plot with a grid and, when the run had one, the
// warm-up shaded up to warmEnd (with a legend entry).
func newPanel(title, yUnit string, warmEnd float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = yUnit
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	if warmEnd > 0 {
		w := shade{x1: warmEnd, col: colWarmup}
		p.Add(w)
		p.Legend.Add("warm-up", w)
	}
	return p
}

func addLine(p *plot.Plot, name string, col color.Color, xy plotter.XYs) {
	l, err := plotter.NewLine(xy)
	if err != nil { // NaN or infinite values: leave the line out
		return
	}
	l.LineStyle.Color = col
	l.LineStyle.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(name, l)
}

// shade fills the plot's full height from x0 to x1: the warm-up.
type shade struct {
	x0, x1 float64
	col    color.Color
}

func (s shade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x0, x1 := trX(s.x0), trX(s.x1)
	c.FillPolygon(s.col, c.ClipPolygonXY([]vg.Point{
		{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}))
}

// Thumbnail draws the legend's swatch.
func (s shade) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.col, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y},
		{X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// warmupEnd returns the time the last warm-up second ends (0: none).
func warmupEnd(series []second) float64 {
	end := 0.0
	for _, s := range series {
		if s.Warmup {
			end = s.T
		}
	}
	return end
}

// maxOf returns the largest finite f over the measured seconds, or over
// every second when onlyMeasured finds none (or is false).
func maxOf(series []second, onlyMeasured bool, f func(second) float64) float64 {
	m, any := 0.0, false
	for _, s := range series {
		if onlyMeasured && s.Warmup {
			continue
		}
		if v := f(s); !math.IsNaN(v) && !math.IsInf(v, 0) {
			m, any = math.Max(m, v), true
		}
	}
	if onlyMeasured && !any {
		return maxOf(series, false, f)
	}
	return m
}

// latencyAxisMax is the top of the latency axis: the largest p99 of the
// measured window, with headroom.
func latencyAxisMax(series []second) float64 {
	return niceMax(maxOf(series, true, func(s second) float64 { return max(s.P99Ms, s.E2EP99Ms) }))
}

// niceMax rounds v*1.1 up to 1, 2 or 5 times a power of ten (1 for v <= 0).
func niceMax(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	v *= 1.1
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}
