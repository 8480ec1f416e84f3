package main

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Plot geometry and colours.
const (
	plotW      = 1000
	plotH      = 680
	marginL    = 80
	marginR    = 30
	titleH     = 34
	panelGap   = 60
	marginB    = 40
	targetTick = 6
)

var (
	colBG     = color.RGBA{255, 255, 255, 255}
	colAxis   = color.RGBA{60, 60, 60, 255}
	colGrid   = color.RGBA{225, 225, 225, 255}
	colWarmup = color.RGBA{245, 240, 225, 255}
	colText   = color.RGBA{20, 20, 20, 255}
	colRate   = color.RGBA{31, 119, 180, 255}
	colP50    = color.RGBA{44, 160, 44, 255}
	colP99    = color.RGBA{214, 39, 40, 255}
)

// line is one data series of a panel.
type line struct {
	name string
	col  color.RGBA
	ys   []float64
}

// panel is one chart: x is seconds, shared by every line.
type panel struct {
	title string
	yUnit string
	rect  image.Rectangle // the plotting area, inside the axes
	lines []line
}

// writePlot draws the per-second series as a PNG with two panels:
// throughput (msg/s) and latency (p50 and p99, ms). Warm-up seconds are
// shaded.
func writePlot(path string, series []second, title string) error {
	img := renderPlot(series, title)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := png.Encode(w, img); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// renderPlot draws the image.
func renderPlot(series []second, title string) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, plotW, plotH))
	draw.Draw(img, img.Bounds(), &image.Uniform{colBG}, image.Point{}, draw.Src)
	drawText(img, marginL, 22, title, colText)

	xs := make([]float64, len(series))
	rate, p50, p99 := make([]float64, len(series)), make([]float64, len(series)), make([]float64, len(series))
	var warm []bool
	for i, s := range series {
		xs[i], rate[i], p50[i], p99[i] = s.T, s.MsgPerSec, s.P50Ms, s.P99Ms
		warm = append(warm, s.Warmup)
	}
	panelH := (plotH - titleH - panelGap - marginB - 20) / 2
	top := titleH + 20
	panels := []panel{
		{title: "throughput (acknowledged msg/s per second)", yUnit: "msg/s",
			rect:  image.Rect(marginL, top, plotW-marginR, top+panelH),
			lines: []line{{"msg/s", colRate, rate}}},
		{title: "send-to-ack latency per second (ms)", yUnit: "ms",
			rect:  image.Rect(marginL, top+panelH+panelGap, plotW-marginR, top+2*panelH+panelGap),
			lines: []line{{"p99", colP99, p99}, {"p50", colP50, p50}}},
	}
	xMax := 1.0
	if len(xs) > 0 {
		xMax = math.Max(xMax, xs[len(xs)-1])
	}
	for _, p := range panels {
		drawPanel(img, p, xs, warm, xMax)
	}
	return img
}

func drawPanel(img *image.RGBA, p panel, xs []float64, warm []bool, xMax float64) {
	r := p.rect
	yMax := 0.0
	for _, l := range p.lines {
		for _, y := range l.ys {
			if !math.IsNaN(y) && !math.IsInf(y, 0) {
				yMax = math.Max(yMax, y)
			}
		}
	}
	yStep := niceStep(yMax, targetTick)
	yTop := math.Max(yStep, math.Ceil(yMax/yStep)*yStep)
	xStep := niceStep(xMax, 10)
	px := func(x float64) int { return r.Min.X + int(math.Round(x/xMax*float64(r.Dx()))) }
	py := func(y float64) int { return r.Max.Y - int(math.Round(y/yTop*float64(r.Dy()))) }

	// Warm-up shading: second i covers (T-1, T].
	for i, w := range warm {
		if w {
			x0 := px(math.Max(xs[i]-1, 0))
			fill(img, image.Rect(x0, r.Min.Y, px(xs[i])+1, r.Max.Y), colWarmup)
		}
	}
	// Grid and ticks.
	for y := 0.0; y <= yTop+yStep/2; y += yStep {
		yy := py(y)
		hline(img, r.Min.X, r.Max.X, yy, colGrid)
		hline(img, r.Min.X-5, r.Min.X, yy, colAxis)
		label := fmtTick(y)
		drawText(img, r.Min.X-8-7*len(label), yy+4, label, colText)
	}
	for x := 0.0; x <= xMax+xStep/2; x += xStep {
		xx := px(x)
		if xx > r.Max.X {
			break
		}
		vline(img, xx, r.Min.Y, r.Max.Y, colGrid)
		vline(img, xx, r.Max.Y, r.Max.Y+5, colAxis)
		label := fmtTick(x) + "s"
		drawText(img, xx-7*len(label)/2, r.Max.Y+18, label, colText)
	}
	// Axes.
	hline(img, r.Min.X, r.Max.X, r.Max.Y, colAxis)
	vline(img, r.Min.X, r.Min.Y, r.Max.Y, colAxis)
	drawText(img, r.Min.X, r.Min.Y-8, p.title, colText)

	// Lines and legend.
	lx := r.Max.X - 10
	for _, l := range p.lines {
		for i := 1; i < len(l.ys); i++ {
			thickLine(img, px(xs[i-1]), py(l.ys[i-1]), px(xs[i]), py(l.ys[i]), l.col)
		}
		if len(l.ys) == 1 {
			fill(img, image.Rect(px(xs[0])-2, py(l.ys[0])-2, px(xs[0])+3, py(l.ys[0])+3), l.col)
		}
		lx -= 7*len(l.name) + 30
		fill(img, image.Rect(lx, r.Min.Y-14, lx+16, r.Min.Y-10), l.col)
		drawText(img, lx+20, r.Min.Y-8, l.name, colText)
	}
	if anyWarm(warm) {
		lx -= 7*len("warm-up") + 30
		fill(img, image.Rect(lx, r.Min.Y-17, lx+16, r.Min.Y-7), colWarmup)
		drawText(img, lx+20, r.Min.Y-8, "warm-up", colText)
	}
}

func anyWarm(w []bool) bool {
	for _, b := range w {
		if b {
			return true
		}
	}
	return false
}

// niceStep returns a step of 1, 2 or 5 times a power of ten that cuts
// [0, max] into about n intervals.
func niceStep(max float64, n int) float64 {
	if !(max > 0) {
		return 1
	}
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// fmtTick formats an axis value compactly: 0.25, 12, 150k, 1.2M.
func fmtTick(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 4, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 4, 64) + "k"
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r.Intersect(img.Bounds()), &image.Uniform{c}, image.Point{}, draw.Src)
}

func hline(img *image.RGBA, x0, x1, y int, c color.RGBA) {
	for x := x0; x <= x1; x++ {
		img.SetRGBA(x, y, c)
	}
}

func vline(img *image.RGBA, x, y0, y1 int, c color.RGBA) {
	for y := y0; y <= y1; y++ {
		img.SetRGBA(x, y, c)
	}
}

// thickLine draws a two-pixel line from (x0, y0) to (x1, y1) (Bresenham).
func thickLine(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.SetRGBA(x0, y0, c)
		img.SetRGBA(x0+1, y0, c)
		img.SetRGBA(x0, y0+1, c)
		img.SetRGBA(x0+1, y0+1, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// drawText writes s with its baseline at (x, y) in the 7x13 fixed font.
func drawText(img *image.RGBA, x, y int, s string, c color.RGBA) {
	d := font.Drawer{Dst: img, Src: &image.Uniform{c}, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
