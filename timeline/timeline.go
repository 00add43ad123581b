// Package timeline draws a run as the product page's chart: one mark per call on a time axis,
// shaped and coloured by outcome, the health probes on their own row, the breaker's windows as
// bands labelled 503 or 429 with their Retry-After, and the audit counters in the caption. It
// draws from the call trace and the breaker events recorded beside it (probes and transitions are
// never in the trace). The output is a standalone SVG or HTML file: no script, no font or
// anything else from the network, readable when printed, with text a screen reader can read. It
// shows route patterns, never a raw path or query string.
package timeline

import (
	"strings"

	"github.com/plimsoll/plimsoll/broker"
)

// Run is what a chart is drawn from.
type Run struct {
	Trace  []broker.TraceEntry
	Events []broker.BreakerEvent
	Audit  broker.Audit
}

// Geometry of the chart: x = Left + t·Width/end, with end the run's last instant.
const (
	Left  = 96.0
	Width = 840.0
)

// Classes of a call's mark, one per outcome, with forwarded calls split by the API's answer and
// shed calls by who shed them.
const (
	ClassForwarded  = "forwarded"  // forwarded, the API answered (2xx or another non-overload status)
	ClassOverloaded = "overloaded" // forwarded, the API answered 503 or 429
	ClassShed       = "shed"       // shed by the run's breaker
	ClassForced     = "shed-forced"
	ClassLimited    = "shed-limit" // shed by the per-API limit (bulkhead)
	ClassDenied     = "denied"
	ClassOverBudget = "over-budget"
	ClassInvalid    = "invalid"
	ClassFailed     = "failed"
	ClassProbeOK    = "probe-ok"
	ClassProbeFail  = "probe-not-ready"
)

// apiLimitReason starts the trace reason of a call the per-API limit shed (bulkhead.Shed.Reason).
const apiLimitReason = "API limit:"

// Class is the class of a call's mark.
func Class(e broker.TraceEntry) string {
	switch e.Outcome {
	case broker.Forwarded:
		if e.UpstreamStatus == 503 || e.UpstreamStatus == 429 {
			return ClassOverloaded
		}
		return ClassForwarded
	case broker.Shed:
		switch {
		case strings.HasPrefix(e.Reason, broker.ForcedOpenReason), strings.HasPrefix(e.Reason, broker.ForcedRouteReason):
			return ClassForced
		case strings.HasPrefix(e.Reason, apiLimitReason):
			return ClassLimited
		}
		return ClassShed
	case broker.Denied:
		return ClassDenied
	case broker.OverBudget:
		return ClassOverBudget
	case broker.Invalid:
		return ClassInvalid
	}
	return ClassFailed
}

// End is the chart's last instant in ms: the run's duration, or its last call or event if later;
// at least 1 so that x is defined.
func End(run Run) float64 {
	end := float64(run.Audit.DurationMs)
	for _, e := range run.Trace {
		end = max(end, float64(e.TMs)+e.LatencyMs)
	}
	for _, e := range run.Events {
		end = max(end, float64(e.TMs)+e.LatencyMs)
	}
	return max(end, 1)
}

// X is where an instant t (ms since the run's start) is drawn.
func X(t, end float64) float64 { return Left + t*Width/end }

// Window is one breaker window, as the bands show it.
type Window struct {
	FromMs, ToMs int64
	Is429        bool
	ClosedBy     string // "probe" when a probe's 2xx closed it, "" when it ran out
	Opening      broker.BreakerEvent
}

// Windows pieces the breaker's windows together from its events: an open starts one, extends
// move its end, a close ends it early.
func Windows(events []broker.BreakerEvent) []Window {
	var out []Window
	var cur *Window
	for _, e := range events {
		switch e.Kind {
		case broker.EventOpen:
			out = append(out, Window{FromMs: e.TMs, ToMs: e.UntilMs, Is429: e.Window429, Opening: e})
			cur = &out[len(out)-1]
		case broker.EventExtend:
			if cur != nil {
				cur.ToMs = max(cur.ToMs, e.UntilMs)
				cur.Is429 = cur.Is429 || e.Window429
			}
		case broker.EventClose:
			if cur != nil {
				cur.ToMs, cur.ClosedBy = min(cur.ToMs, e.TMs), "probe"
				cur = nil
			}
		}
	}
	return out
}

// meaning says in words what each class of mark means, for the legend and the screen reader.
var meaning = map[string]string{
	ClassForwarded:  "forwarded, the API answered",
	ClassOverloaded: "forwarded, overloaded reply (503/429)",
	ClassShed:       "shed by the breaker (503, never forwarded)",
	ClassForced:     "shed: forced open by the operator",
	ClassLimited:    "shed by the per-API limit",
	ClassDenied:     "denied by the grant",
	ClassOverBudget: "over budget",
	ClassInvalid:    "invalid request",
	ClassFailed:     "failed: no usable answer",
	ClassProbeOK:    "probe 2xx: the breaker closes",
	ClassProbeFail:  "probe not ready: the call is shed",
}

// lanes is the order of the rows of calls; a row is drawn only when it has marks, except the
// first two, which the product page always shows.
var lanes = []struct {
	name    string
	classes []string
}{
	{"forwarded", []string{ClassForwarded, ClassOverloaded}},
	{"shed", []string{ClassShed, ClassForced, ClassLimited}},
	{"denied", []string{ClassDenied}},
	{"over budget", []string{ClassOverBudget}},
	{"invalid", []string{ClassInvalid}},
	{"failed", []string{ClassFailed}},
}
