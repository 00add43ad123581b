package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/plimsoll/plimsoll/broker"
)

// A mark is how one call is drawn on the demo's timeline.
type mark struct {
	glyph string
	color string // ANSI SGR code
	means string
}

var (
	markForwarded  = mark{"█", "32", "forwarded, 2xx"}
	markOverloaded = mark{"▲", "31", "forwarded, overloaded reply"}
	markShed       = mark{"·", "33", "shed: the broker answered 503 itself"}
	markNotReady   = mark{"○", "35", "probe, not ready: shed"}
	markClosed     = mark{"●", "36", "probe 2xx: breaker closes, call forwarded"}
	markOther      = mark{"■", "37", "other outcome"}
	legend         = []mark{markForwarded, markOverloaded, markShed, markNotReady, markClosed}
)

func markFor(e broker.TraceEntry) mark {
	switch {
	case e.Probe == broker.ProbeOK:
		return markClosed
	case e.Probe == broker.ProbeNotReady:
		return markNotReady
	case e.Outcome == broker.Shed:
		return markShed
	case e.Outcome == broker.Forwarded && (e.UpstreamStatus == 503 || e.UpstreamStatus == 429):
		return markOverloaded
	case e.Outcome == broker.Forwarded && e.UpstreamStatus/100 == 2:
		return markForwarded
	}
	return markOther
}

// timeline draws one mark per call, one column per 100 ms slot, with the API's overload window
// above it, a time axis below it, a legend and the audit summary.
type timeline struct {
	w     io.Writer
	color bool
	slots int // columns; 80 for the demo's 8 s
}

func (tl timeline) paint(m mark) string {
	if !tl.color {
		return m.glyph
	}
	return "\x1b[" + m.color + "m" + m.glyph + "\x1b[0m"
}

func (tl timeline) draw(title string, trace []broker.TraceEntry, overloadFrom, overloadTo int, a broker.Audit) {
	fmt.Fprintf(tl.w, "%s\n\n", title)
	api := make([]string, tl.slots)
	calls := make([]string, tl.slots)
	for i := range api {
		api[i], calls[i] = " ", " "
		if i >= overloadFrom && i < overloadTo {
			api[i] = tl.paint(mark{"▒", "31", ""})
		} else {
			api[i] = "─"
		}
	}
	for i, e := range trace {
		if i < tl.slots {
			calls[i] = tl.paint(markFor(e))
		}
	}
	fmt.Fprintf(tl.w, "  API    %s\n", strings.Join(api, ""))
	fmt.Fprintf(tl.w, "  calls  %s\n", strings.Join(calls, ""))
	fmt.Fprintf(tl.w, "         %s\n\n", axis(tl.slots))
	for _, m := range legend {
		fmt.Fprintf(tl.w, "  %s %s\n", tl.paint(m), m.means)
	}
	fmt.Fprintf(tl.w, "  %s the API is overloaded\n\n", tl.paint(mark{"▒", "31", ""}))
	fmt.Fprintf(tl.w, "  audit: host_calls=%d forwarded=%d shed=%d denied=%d failed=%d probes=%d probes_ok=%d breaker_opens=%d status=%s duration=%dms\n",
		a.HostCalls, a.Forwarded, a.Shed, a.Denied, a.Failed, a.Probes, a.ProbesOK, a.BreakerOpens, a.Status, a.DurationMs)
}

// axis labels every tenth column with its second: "0s        1s        2s…".
func axis(slots int) string {
	var b strings.Builder
	for col := 0; col <= slots; col += 10 {
		label := fmt.Sprintf("%ds", col/10)
		b.WriteString(label)
		if col+10 <= slots {
			b.WriteString(strings.Repeat(" ", 10-len(label)))
		}
	}
	return b.String()
}
