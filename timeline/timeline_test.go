package timeline_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
	"github.com/plimsoll/plimsoll/timeline"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// element is a parsed SVG element, with its attributes and the text of its <title> child.
type element struct {
	name  string
	attrs map[string]string
	title string
}

// parseSVG reads every element of an SVG (or an HTML page's inline SVG, which is XML too here).
func parseSVG(t *testing.T, doc []byte) []element {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = true
	var out []element
	var stack []int // index in out of each open element
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the SVG is well-formed XML")
		switch tk := tok.(type) {
		case xml.StartElement:
			el := element{name: tk.Name.Local, attrs: map[string]string{}}
			for _, a := range tk.Attr {
				el.attrs[a.Name.Local] = a.Value
			}
			out = append(out, el)
			stack = append(stack, len(out)-1)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if n := len(stack); n >= 2 && out[stack[n-1]].name == "title" {
				out[stack[n-2]].title += string(tk)
			}
		}
	}
	return out
}

func marks(els []element, kind string) []element {
	var out []element
	for _, e := range els {
		if e.name == "use" && strings.HasPrefix(e.attrs["class"], kind+" ") {
			out = append(out, e)
		}
	}
	return out
}

func attrFloat(t *testing.T, e element, name string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(e.attrs[name], 64)
	require.NoError(t, err, "attribute %s", name)
	return f
}

// everyOutcome is a run with one call of each class, at known times.
func everyOutcome() timeline.Run {
	tr := []broker.TraceEntry{
		{Seq: 1, TMs: 0, Method: "GET", Path: "/pets/42", Route: "GET /pets/*", Outcome: broker.Forwarded, Status: 200, UpstreamStatus: 200},
		{Seq: 2, TMs: 100, Method: "GET", Path: "/pets/43", Route: "GET /pets/*", Outcome: broker.Forwarded, Status: 503, UpstreamStatus: 503},
		{Seq: 3, TMs: 200, Method: "GET", Path: "/pets/44", Route: "GET /pets/*", Outcome: broker.Shed, Status: 503, Reason: "breaker open after upstream 503"},
		{Seq: 4, TMs: 300, Method: "GET", Path: "/pets/45", Route: "GET /pets/*", Outcome: broker.Shed, Status: 503, Reason: broker.ForcedOpenReason + "incident 7"},
		{Seq: 5, TMs: 400, Method: "DELETE", Path: "/pets/46", Outcome: broker.Denied, Status: 403, Reason: "no granted route matches DELETE /pets/46"},
		{Seq: 6, TMs: 500, Method: "GET", Path: "/pets/47", Route: "GET /pets/*", Outcome: broker.OverBudget, Status: 429},
		{Seq: 7, TMs: 600, Method: "GET", Path: "/pets/../x", Outcome: broker.Invalid, Status: 400},
		{Seq: 8, TMs: 700, Method: "GET", Path: "/pets/48", Route: "GET /pets/*", Outcome: broker.Failed, Status: 504, LatencyMs: 300},
		{Seq: 9, TMs: 800, Method: "GET", Path: "/pets/49", Route: "GET /pets/*", Outcome: broker.Forwarded, Status: 404, UpstreamStatus: 404},
		{Seq: 10, TMs: 900, Method: "GET", Path: "/pets/50", Route: "GET /pets/*", Outcome: broker.Shed, Status: 503, Reason: broker.ForcedRouteReason + "GET /pets/*: incident 7"},
		{Seq: 11, TMs: 1000, Method: "GET", Path: "/pets/51", Route: "GET /pets/*", Outcome: broker.Shed, Status: 503, Reason: "API limit: 4 in flight at limit 4 and the queue is full (8 queued)"},
		{Seq: 12, TMs: 1100, Method: "GET", Path: "/pets/52", Route: "GET /pets/*", Outcome: broker.Shed, Status: 503, Reason: "breaker opened after upstream 503 while the call waited for the API limit"},
	}
	return timeline.Run{Trace: tr, Audit: broker.Audit{RunID: "r1", Profile: "petstore", Tool: "t.js", Status: broker.StatusOK, DurationMs: 2000,
		Counters: broker.Counters{HostCalls: 9, Forwarded: 3, Shed: 2, Denied: 1, OverBudget: 1, Invalid: 1, Failed: 1}}}
}

func TestSVGHasAMarkPerCallAtItsTimeWithItsClass(t *testing.T) {
	run := everyOutcome()
	var buf bytes.Buffer
	require.NoError(t, timeline.WriteSVG(&buf, run))
	calls := marks(parseSVG(t, buf.Bytes()), "call")
	require.Len(t, calls, len(run.Trace))
	want := []string{"forwarded", "overloaded", "shed", "shed-forced", "denied", "over-budget", "invalid", "failed", "forwarded",
		"shed-forced", "shed-limit", "shed"}
	for i, m := range calls {
		e := run.Trace[i]
		assert.Equal(t, strconv.Itoa(e.Seq), m.attrs["data-seq"])
		assert.Equal(t, "call "+want[i], m.attrs["class"], "call %d", e.Seq)
		assert.Equal(t, "#m-"+want[i], m.attrs["href"], "call %d is drawn in its class's shape", e.Seq)
		// end is the run's duration, 2000 ms: x = 96 + t·840/2000.
		assert.InDelta(t, 96+float64(e.TMs)*840/2000, attrFloat(t, m, "x"), 0.01, "call %d", e.Seq)
		assert.Contains(t, m.title, fmt.Sprintf("#%d ·", e.Seq), "every mark has words")
	}
}

func TestChartShowsNoRawPathOrSecret(t *testing.T) {
	run := everyOutcome()
	for name, write := range map[string]func(io.Writer, timeline.Run) error{"svg": timeline.WriteSVG, "html": timeline.WriteHTML} {
		var buf bytes.Buffer
		require.NoError(t, write(&buf, run))
		out := buf.String()
		for _, e := range run.Trace {
			assert.NotContains(t, out, e.Path, "%s: raw path of call %d", name, e.Seq)
		}
		assert.NotContains(t, out, "incident 7", "%s: the operator's reason is not drawn", name)
		assert.Contains(t, out, "GET /pets/*", "%s: the route pattern is", name)
		assert.Contains(t, out, "DELETE (no granted route)", name)
	}
}

func TestStandaloneFilesFetchNothing(t *testing.T) {
	run := everyOutcome()
	for name, write := range map[string]func(io.Writer, timeline.Run) error{"svg": timeline.WriteSVG, "html": timeline.WriteHTML} {
		var buf bytes.Buffer
		require.NoError(t, write(&buf, run))
		out := buf.String()
		assert.NotContains(t, strings.ToLower(out), "<script", name)
		assert.NotContains(t, out, "@import", name)
		assert.NotContains(t, out, "url(", name)
		// The only URL is the SVG namespace, which is a name, not a fetch.
		assert.Equal(t, strings.Count(out, "http"), strings.Count(out, "http://www.w3.org/2000/svg")+strings.Count(out, "http-equiv"), name)
		assert.Contains(t, out, "<title", name)
		assert.Contains(t, out, "@media print", name)
	}
	var page bytes.Buffer
	require.NoError(t, timeline.WriteHTML(&page, run))
	assert.Contains(t, page.String(), `content="default-src 'none'; style-src 'unsafe-inline'"`)
	assert.Contains(t, page.String(), `<html lang="en">`)
	assert.Contains(t, page.String(), `aria-labelledby="chart-title chart-desc"`)
	parseSVG(t, page.Bytes()) // the page is well-formed too
}

// seedRun is the product page's worked example, run by a real broker in fake time: one call every
// 100 ms for 8 s, the API overloaded with 503 + Retry-After 5 from 0.5 s until it heals at 2.2 s.
func seedRun(t *testing.T) timeline.Run {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seed.yaml")
	require.NoError(t, os.WriteFile(path, []byte("base_url: http://api.test/v1\nroutes:\n  - GET /items/*\nhealth_check: GET /status\nbudget:\n  calls: 100\n"), 0o600))
	p, err := profiles.LoadFile(path)
	require.NoError(t, err)
	var run timeline.Run
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		api := roundTrip(func(r *http.Request) (*http.Response, error) {
			healthy := time.Since(start) < 500*time.Millisecond || time.Since(start) >= 2200*time.Millisecond
			status := 200
			if !healthy {
				status = 503
			}
			h := http.Header{}
			if !healthy && r.URL.RequestURI() != "/v1/status" {
				h.Set("Retry-After", "5")
			}
			return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("{}"))}, nil
		})
		b, err := broker.New(broker.Config{Profile: p, Transport: api, RunID: "seed", Tool: "chart.js"})
		require.NoError(t, err)
		for i := range 80 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * 100 * time.Millisecond)))
			b.Call(context.Background(), broker.Request{Method: "GET", Path: "/items/" + strconv.Itoa(i)})
		}
		time.Sleep(time.Until(start.Add(8 * time.Second)))
		run = timeline.Run{Trace: b.Trace(), Events: b.BreakerEvents()}
		run.Audit = b.Finish(broker.StatusOK, nil)
	})
	return run
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestSeedChartDrawn(t *testing.T) {
	run := seedRun(t)
	var buf bytes.Buffer
	require.NoError(t, timeline.WriteSVG(&buf, run))
	els := parseSVG(t, buf.Bytes())

	calls := marks(els, "call")
	require.Len(t, calls, 80)
	for i, m := range calls {
		want := "forwarded"
		switch {
		case i == 5:
			want = "overloaded"
		case i >= 6 && i <= 24:
			want = "shed"
		}
		assert.Equal(t, "call "+want, m.attrs["class"], "call at %.1f s", float64(i)/10)
		assert.InDelta(t, 96+float64(i*100)*840/8000, attrFloat(t, m, "x"), 0.01)
	}

	probes := marks(els, "probe")
	require.Len(t, probes, 2, "both probes on their own row")
	assert.Equal(t, "probe probe-not-ready", probes[0].attrs["class"])
	assert.Equal(t, "probe probe-ok", probes[1].attrs["class"])
	assert.InDelta(t, 96+1500*840/8000.0, attrFloat(t, probes[0], "x"), 0.01)
	assert.InDelta(t, 96+2500*840/8000.0, attrFloat(t, probes[1], "x"), 0.01)
	assert.NotEqual(t, probes[0].attrs["y"], calls[0].attrs["y"], "probes are not on the calls' row")

	var bands []element
	for _, e := range els {
		if e.name == "rect" && strings.HasPrefix(e.attrs["class"], "window ") && e.title != "" {
			bands = append(bands, e)
		}
	}
	require.Len(t, bands, 1)
	assert.Equal(t, "window w503", bands[0].attrs["class"])
	assert.InDelta(t, 96+500*840/8000.0, attrFloat(t, bands[0], "x"), 0.05, "opens with the 503 at 0.5 s")
	assert.InDelta(t, 2000*840/8000.0, attrFloat(t, bands[0], "width"), 0.05, "closed by the probe at 2.5 s")
	assert.Equal(t, "503 · Retry-After 5 → 5.0 s · closed by a probe at 2.5 s", bands[0].title)
	assert.Contains(t, buf.String(), "audit: host_calls 80 · forwarded 61 · shed 19 · denied 0 · over_budget 0 · invalid 0 · failed 0<")
	assert.Contains(t, buf.String(), ">probes 2 (ok 1) · breaker_opens 1 · budget 100 · ok in 8.0 s<")
}

func TestWindowsFromEvents(t *testing.T) {
	ev := []broker.BreakerEvent{
		{TMs: 100, Kind: broker.EventOpen, Status: 503, RetryAfter: "120", CooldownMs: 30000, Clamped: true, UntilMs: 30100},
		{TMs: 150, Kind: broker.EventExtend, Status: 429, UntilMs: 31150, Window429: true},
		{TMs: 40000, Kind: broker.EventOpen, Status: 503, CooldownMs: 1000, UntilMs: 41000},
		{TMs: 40500, Kind: broker.EventProbe, Status: 200, OK: true},
		{TMs: 40500, Kind: broker.EventClose},
	}
	w := timeline.Windows(ev)
	require.Len(t, w, 2)
	assert.Equal(t, int64(31150), w[0].ToMs, "extended")
	assert.True(t, w[0].Is429, "a 429 taints the window")
	assert.Equal(t, "429 · Retry-After 120 → 30.0 s (clamped)", timeline.WindowLabel(w[0]))
	assert.Equal(t, int64(40500), w[1].ToMs, "closed early")
	assert.Equal(t, "503 · no Retry-After → 1.0 s default · closed by a probe at 40.5 s", timeline.WindowLabel(w[1]))
}

func TestXIsLinearInTime(t *testing.T) {
	assert.Equal(t, 96.0, timeline.X(0, 5000))
	assert.Equal(t, 936.0, timeline.X(5000, 5000))
	assert.Equal(t, 516.0, timeline.X(2500, 5000))
	assert.Equal(t, 1.0, timeline.End(timeline.Run{}), "an empty run still has an axis")
	assert.False(t, math.IsNaN(timeline.X(0, timeline.End(timeline.Run{}))))
}

// bigRun is a 1,000-call run with a window every 100 calls.
func bigRun() timeline.Run {
	var run timeline.Run
	for i := range 1000 {
		e := broker.TraceEntry{Seq: i + 1, TMs: int64(i * 10), Method: "GET", Path: "/items/" + strconv.Itoa(i), Route: "GET /items/*",
			Outcome: broker.Forwarded, Status: 200, UpstreamStatus: 200, LatencyMs: 1.5}
		switch {
		case i%100 == 50:
			e.Status, e.UpstreamStatus = 503, 503
			run.Events = append(run.Events, broker.BreakerEvent{TMs: e.TMs, Kind: broker.EventOpen, Status: 503, RetryAfter: "1", CooldownMs: 1000, UntilMs: e.TMs + 1000})
		case i%100 > 50 && i%100 < 60:
			e.Outcome, e.Status, e.UpstreamStatus = broker.Shed, 503, 0
		}
		run.Trace = append(run.Trace, e)
	}
	run.Audit = broker.Audit{RunID: "big", Profile: "p", Tool: "t.js", Status: broker.StatusOK, DurationMs: 10000,
		Counters: broker.Counters{HostCalls: 1000, Forwarded: 910, Shed: 90, BreakerOpens: 10}}
	return run
}

func TestBigRunIsWellFormed(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, timeline.WriteSVG(&buf, bigRun()))
	assert.Len(t, marks(parseSVG(t, buf.Bytes()), "call"), 1000)
}

// BenchmarkSVG1000Calls is the figure "timeline of a 1,000-call run": time to draw, and the
// SVG's size (svg_bytes); the HTML page beside it for comparison.
func BenchmarkSVG1000Calls(b *testing.B) {
	run := bigRun()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		_ = timeline.WriteSVG(&buf, run)
	}
	b.ReportMetric(float64(buf.Len()), "svg_bytes")
}

func BenchmarkHTML1000Calls(b *testing.B) {
	run := bigRun()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		_ = timeline.WriteHTML(&buf, run)
	}
	b.ReportMetric(float64(buf.Len()), "html_bytes")
}

// BenchmarkTraceJSON1000Calls is the baseline: writing the same run's trace as JSON lines.
func BenchmarkTraceJSON1000Calls(b *testing.B) {
	run := bigRun()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		_ = broker.WriteTrace(&buf, run.Trace)
	}
	b.ReportMetric(float64(buf.Len()), "json_bytes")
}
