package timeline

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/plimsoll/plimsoll/broker"
)

// Heights of the chart's parts, in px.
const (
	chartWidth = 960
	top        = 40 // below the title
	rowHeight  = 26
	legendRow  = 18
)

// style is the chart's CSS: colours by class, shapes tell classes apart in grey print too.
const style = `
text{font:12px system-ui,-apple-system,"Segoe UI",sans-serif;fill:#222}
.title{font-size:14px;font-weight:600}
.lane{fill:#555}
.grid{stroke:#ddd}
.axis{stroke:#888}
.window{fill:#fde2e1;stroke:#d32f2f;stroke-width:.5}
.window.w429{fill:#fff1d6;stroke:#ef6c00}
.wlabel{font-size:11px;fill:#7a1c1c}
.forwarded{fill:#2e7d32}
.overloaded{fill:#d32f2f}
.shed{fill:#f9a825}
.shed-forced{fill:#6a1b9a}
.shed-limit{fill:#00838f}
.denied{fill:#37474f}
.over-budget{fill:#ad1457}
.invalid{fill:#8d6e63}
.failed{fill:#212121}
.probe-ok{fill:#0277bd}
.probe-not-ready{fill:#9e9e9e}
.caption{fill:#333}
@media print{text{fill:#000}.window{fill:#eee}.grid{stroke:#ccc}}
`

// shapes are the marks' outlines around (0,0), one per class.
var shapes = map[string]string{
	ClassForwarded:  "M-1.5,-8h3v16h-3z",
	ClassOverloaded: "M0,-8L6,6H-6z",
	ClassShed:       "M-3,0a3,3 0 1,0 6,0a3,3 0 1,0 -6,0z",
	ClassForced:     "M-4,-4h8v8h-8z",
	ClassLimited:    "M0,-5L5,0L0,5L-5,0z",
	ClassDenied:     "M-5,-4l1,-1l4,4l4,-4l1,1l-4,4l4,4l-1,1l-4,-4l-4,4l-1,-1l4,-4z",
	ClassOverBudget: "M0,-6L6,0L0,6L-6,0z",
	ClassInvalid:    "M-5,-1.5h10v3h-10z",
	ClassFailed:     "M-4,-4h8v8h-8zM-2,-2v4h4v-4z",
	ClassProbeOK:    "M-5,0a5,5 0 1,0 10,0a5,5 0 1,0 -10,0z",
	ClassProbeFail:  "M-5,0a5,5 0 1,0 10,0a5,5 0 1,0 -10,0zM-3,0a3,3 0 1,0 6,0a3,3 0 1,0 -6,0z",
}

// legendOrder lists the classes in the legend.
var legendOrder = []string{ClassForwarded, ClassOverloaded, ClassShed, ClassForced, ClassLimited,
	ClassDenied, ClassOverBudget, ClassInvalid, ClassFailed, ClassProbeOK, ClassProbeFail}

// WriteSVG draws the run as a standalone SVG document.
func WriteSVG(w io.Writer, run Run) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	d := newDrawing(bw, run)
	d.svg(true)
	return bw.Flush()
}

type drawing struct {
	w      *bufio.Writer
	run    Run
	end    float64
	rows   []lane
	counts map[string]int
}

type lane struct {
	name    string
	classes []string
	y       float64
}

func newDrawing(w *bufio.Writer, run Run) *drawing {
	d := &drawing{w: w, run: run, end: End(run), counts: map[string]int{}}
	for _, e := range run.Trace {
		d.counts[Class(e)]++
	}
	y := float64(top + rowHeight + rowHeight/2) // the windows' row comes first
	for i, l := range lanes {
		if i >= 2 && !d.any(l.classes) {
			continue
		}
		d.rows = append(d.rows, lane{l.name, l.classes, y})
		y += rowHeight
	}
	d.rows = append(d.rows, lane{"probes", []string{ClassProbeOK, ClassProbeFail}, y})
	return d
}

func (d *drawing) any(classes []string) bool {
	for _, c := range classes {
		if d.counts[c] > 0 {
			return true
		}
	}
	return false
}

func (d *drawing) laneY(class string) float64 {
	for _, l := range d.rows {
		for _, c := range l.classes {
			if c == class {
				return l.y
			}
		}
	}
	return 0
}

func (d *drawing) printf(format string, args ...any) { fmt.Fprintf(d.w, format, args...) }

// height of the whole chart: title, windows, lanes, axis, legend, caption.
func (d *drawing) heights() (axisY, legendY, captionY, total float64) {
	axisY = d.rows[len(d.rows)-1].y + rowHeight/2 + 4
	legendY = axisY + 34
	rows := math.Ceil(float64(len(legendOrder)+2) / 3)
	captionY = legendY + rows*legendRow + 12
	return axisY, legendY, captionY, captionY + 2*legendRow - 4
}

// svg writes the <svg> element; standalone adds the XML declaration and namespace.
func (d *drawing) svg(standalone bool) {
	_, _, _, h := d.heights()
	if standalone {
		d.printf(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	}
	d.printf(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %.0f" width="%d" height="%.0f" role="img" aria-labelledby="chart-title chart-desc">`+"\n",
		chartWidth, h, chartWidth, h)
	d.printf("<title id=\"chart-title\">%s</title>\n<desc id=\"chart-desc\">%s</desc>\n", esc(Title(d.run)), esc(Summary(d.run)))
	d.printf("<style>%s</style>\n<defs>", style)
	for _, c := range legendOrder {
		d.printf(`<path id="m-%s" d="%s"/>`, c, shapes[c])
	}
	d.printf("</defs>\n<text class=\"title\" x=\"8\" y=\"20\">%s</text>\n", esc(Title(d.run)))
	d.windows()
	d.lanes()
	d.calls()
	d.probes()
	d.axis()
	d.legend()
	d.caption()
	d.printf("</svg>\n")
}

// Title names the run.
func Title(run Run) string {
	a := run.Audit
	return fmt.Sprintf("plimsoll run %s · profile %s · tool %s · %s", a.RunID, a.Profile, a.Tool, a.Status)
}

func (d *drawing) windows() {
	y := float64(top)
	d.printf(`<text class="lane" x="8" y="%.0f">breaker</text>`+"\n", y+rowHeight/2+4)
	d.printf(`<g class="windows" aria-label="breaker windows">`)
	for _, win := range Windows(d.run.Events) {
		x0, x1 := X(float64(win.FromMs), d.end), X(float64(min(float64(win.ToMs), d.end)), d.end)
		cls := "window w503"
		if win.Is429 {
			cls = "window w429"
		}
		label := WindowLabel(win)
		d.printf(`<rect class="%s" x="%.1f" y="%.0f" width="%.1f" height="%d"><title>%s</title></rect>`,
			cls, x0, y+2, max(x1-x0, 1), rowHeight-4, esc(label))
		d.printf(`<text class="wlabel" x="%.1f" y="%.0f">%s</text>`, x0+3, y+rowHeight/2+4, esc(label))
	}
	d.printf("</g>\n")
}

// WindowLabel says what opened a window and how it ended: "503 · Retry-After 120 → 30 s (clamped)
// · closed by a probe at 2.5 s".
func WindowLabel(win Window) string {
	o := win.Opening
	status := "503"
	if win.Is429 {
		status = "429"
	}
	var b strings.Builder
	b.WriteString(status)
	switch {
	case o.RetryAfter == "":
		fmt.Fprintf(&b, " · no Retry-After → %s default", seconds(o.CooldownMs))
	case o.Clamped:
		fmt.Fprintf(&b, " · Retry-After %s → %s (clamped)", o.RetryAfter, seconds(o.CooldownMs))
	default:
		fmt.Fprintf(&b, " · Retry-After %s → %s", o.RetryAfter, seconds(o.CooldownMs))
	}
	if win.ClosedBy == "probe" {
		fmt.Fprintf(&b, " · closed by a probe at %s", seconds(win.ToMs))
	}
	return b.String()
}

func seconds(ms int64) string { return fmt.Sprintf("%.1f s", float64(ms)/1000) }

func (d *drawing) lanes() {
	for _, l := range d.rows {
		d.printf(`<text class="lane" x="8" y="%.0f">%s</text><line class="grid" x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f"/>`+"\n",
			l.y+4, l.name, Left, Left+Width, l.y, l.y)
	}
}

func (d *drawing) calls() {
	d.printf(`<g class="calls" aria-label="calls">` + "\n")
	for _, e := range d.run.Trace {
		c := Class(e)
		d.printf(`<use href="#m-%s" class="call %s" x="%.2f" y="%.0f" data-seq="%d"><title>%s</title></use>`+"\n",
			c, c, X(float64(e.TMs), d.end), d.laneY(c), e.Seq, esc(CallLabel(e)))
	}
	d.printf("</g>\n")
}

// CallLabel describes a call in words: "#6 · 0.6 s · GET /items/* · shed by the breaker (503,
// never forwarded) → 503". It names the route pattern, never the raw path.
func CallLabel(e broker.TraceEntry) string {
	route := e.Route
	if route == "" {
		route = e.Method + " (no granted route)"
	}
	s := fmt.Sprintf("#%d · %s · %s · %s → %d", e.Seq, seconds(e.TMs), route, meaning[Class(e)], e.Status)
	if e.Probe != "" {
		s += " · picked to probe: " + e.Probe
	}
	return s
}

func (d *drawing) probes() {
	d.printf(`<g class="probes" aria-label="health probes">` + "\n")
	for _, e := range d.run.Events {
		if e.Kind != broker.EventProbe {
			continue
		}
		c := ClassProbeFail
		if e.OK {
			c = ClassProbeOK
		}
		d.printf(`<use href="#m-%s" class="probe %s" x="%.2f" y="%.0f"><title>%s</title></use>`+"\n",
			c, c, X(float64(e.TMs), d.end), d.laneY(c), esc(ProbeLabel(e)))
	}
	d.printf("</g>\n")
}

// ProbeLabel describes a probe: "probe at 1.5 s → 503 · not ready".
func ProbeLabel(e broker.BreakerEvent) string {
	answer := fmt.Sprint(e.Status)
	if e.Status == 0 {
		answer = "nothing in time"
	}
	if e.OK {
		return fmt.Sprintf("probe at %s → %s · the breaker closes", seconds(e.TMs), answer)
	}
	if e.Status >= 200 && e.Status < 300 {
		return fmt.Sprintf("probe at %s → %s · a 429 reached the window meanwhile: it stays open", seconds(e.TMs), answer)
	}
	return fmt.Sprintf("probe at %s → %s · not ready", seconds(e.TMs), answer)
}

// tickStep is a round step (1, 2 or 5 × 10^k ms) that gives at most 10 ticks.
func tickStep(end float64) float64 {
	for p := 1.0; ; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if end/(m*p) <= 10 {
				return m * p
			}
		}
	}
}

func (d *drawing) axis() {
	axisY, _, _, _ := d.heights()
	d.printf(`<g class="axis-ticks" aria-hidden="true"><line class="axis" x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f"/>`, Left, Left+Width, axisY, axisY)
	step := tickStep(d.end)
	for t := 0.0; t <= d.end+step/1e6; t += step {
		x := X(t, d.end)
		d.printf(`<line class="axis" x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f"/><text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`,
			x, x, axisY, axisY+5, x, axisY+18, tickLabel(t, step))
	}
	d.printf("<text x=\"8\" y=\"%.0f\">time</text></g>\n", axisY+18)
}

func tickLabel(ms, step float64) string {
	if step < 1000 {
		if ms < 1000 && step < 100 {
			return fmt.Sprintf("%.0f ms", ms)
		}
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	return fmt.Sprintf("%.0f s", ms/1000)
}

func (d *drawing) legend() {
	_, y, _, _ := d.heights()
	d.printf(`<g class="legend" aria-label="legend">`)
	items := append([]string{}, legendOrder...)
	for i, c := range items {
		x, yy := 96+float64(i%3)*290, y+float64(i/3)*legendRow
		d.printf(`<use href="#m-%s" class="%s" x="%.0f" y="%.0f"/><text x="%.0f" y="%.0f">%s</text>`,
			c, c, x, yy, x+12, yy+4, esc(meaning[c]))
	}
	n := len(items)
	x, yy := 96+float64(n%3)*290, y+float64(n/3)*legendRow
	d.printf(`<rect class="window w503" x="%.0f" y="%.0f" width="10" height="10"/><text x="%.0f" y="%.0f">breaker window after a 503 (probed)</text>`, x-5, yy-5, x+12, yy+4)
	n++
	x, yy = 96+float64(n%3)*290, y+float64(n/3)*legendRow
	d.printf(`<rect class="window w429" x="%.0f" y="%.0f" width="10" height="10"/><text x="%.0f" y="%.0f">429 window (waited out)</text>`, x-5, yy-5, x+12, yy+4)
	d.printf("</g>\n")
}

func (d *drawing) caption() {
	_, _, y, _ := d.heights()
	for i, line := range captionLines(d.run.Audit) {
		d.printf(`<text class="caption" x="8" y="%.0f">%s</text>`+"\n", y+float64(i*legendRow), esc(line))
	}
}

// Caption is the audit line's counters in words.
func Caption(a broker.Audit) string { return strings.Join(captionLines(a), " · ") }

func captionLines(a broker.Audit) []string {
	return []string{
		fmt.Sprintf("audit: host_calls %d · forwarded %d · shed %d · denied %d · over_budget %d · invalid %d · failed %d",
			a.HostCalls, a.Forwarded, a.Shed, a.Denied, a.OverBudget, a.Invalid, a.Failed),
		fmt.Sprintf("probes %d (ok %d) · breaker_opens %d · budget %d · %s in %s",
			a.Probes, a.ProbesOK, a.BreakerOpens, a.BudgetCalls, a.Status, seconds(a.DurationMs)),
	}
}

// Summary is the chart in one paragraph, for a screen reader.
func Summary(run Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d calls over %s.", len(run.Trace), seconds(int64(End(run))))
	for _, c := range legendOrder[:9] {
		if n := countClass(run.Trace, c); n > 0 {
			fmt.Fprintf(&b, " %d %s.", n, meaning[c])
		}
	}
	for _, w := range Windows(run.Events) {
		fmt.Fprintf(&b, " Breaker window from %s to %s: %s.", seconds(w.FromMs), seconds(w.ToMs), WindowLabel(w))
	}
	for _, e := range run.Events {
		if e.Kind == broker.EventProbe {
			fmt.Fprintf(&b, " %s.", strings.ToUpper(ProbeLabel(e)[:1])+ProbeLabel(e)[1:])
		}
	}
	return b.String()
}

func countClass(trace []broker.TraceEntry, class string) int {
	n := 0
	for _, e := range trace {
		if Class(e) == class {
			n++
		}
	}
	return n
}

// esc makes text safe inside an XML element or attribute: valid UTF-8, no markup, no control
// characters (xml.EscapeText turns those it cannot write into U+FFFD).
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(strings.ToValidUTF8(s, "\uFFFD")))
	return b.String()
}
