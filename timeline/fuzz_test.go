package timeline_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/timeline"
)

// FuzzChartIsWellFormed draws runs whose every string is hostile (a tool's method, a route, a
// reason, an API's Retry-After, an audit's names) and requires well-formed XML with the mark
// count right and no trace of the raw path.
func FuzzChartIsWellFormed(f *testing.F) {
	f.Add("GET", "GET /pets/*", "/pets/42", "breaker open", "5", "run", "profile", int64(100), 2.5)
	f.Add("<script>", "]]><x>", "/a?b=c&d", "forced open by the operator: <b>", "\x00\xff\xfe", "\"'&", "\u202e", int64(-5), -1.0)
	f.Add("", "", "", "API limit", "Wed, 21 Oct 2015 07:28:00 GMT", strings.Repeat("x", 300), "p", int64(1<<40), 1e300)
	f.Fuzz(func(t *testing.T, method, route, tail, reason, retryAfter, runID, profile string, tms int64, latency float64) {
		path := "/q9z/" + tail // a marker no other field can spell, unless it holds it too
		run := timeline.Run{
			Trace: []broker.TraceEntry{
				{Seq: 1, TMs: tms, Method: method, Route: route, Path: path, Outcome: broker.Shed, Reason: reason, LatencyMs: latency},
				{Seq: 2, TMs: tms + 1, Method: method, Path: path, Outcome: broker.Denied, Status: 403},
			},
			Events: []broker.BreakerEvent{{TMs: tms, Kind: broker.EventOpen, Status: 503, RetryAfter: retryAfter, UntilMs: tms + 10},
				{TMs: tms + 1, Kind: broker.EventProbe, Status: 200, OK: true}},
			Audit: broker.Audit{RunID: runID, Profile: profile, Tool: "t.js", Status: broker.StatusOK},
		}
		for _, write := range []func(io.Writer, timeline.Run) error{timeline.WriteSVG, timeline.WriteHTML} {
			var buf bytes.Buffer
			if err := write(&buf, run); err != nil {
				t.Fatal(err)
			}
			dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
			dec.Strict = true
			calls := 0
			for {
				tok, err := dec.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("not well-formed: %v", err)
				}
				if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "use" {
					for _, a := range se.Attr {
						if a.Name.Local == "class" && strings.HasPrefix(a.Value, "call ") {
							calls++
						}
					}
				}
			}
			if calls != 2 {
				t.Fatalf("%d call marks, want 2", calls)
			}
			if !strings.Contains(route+runID+profile+method+retryAfter+reason, "q9z") && strings.Contains(buf.String(), "q9z") {
				t.Fatalf("the raw path %q is drawn", path)
			}
		}
	})
}
