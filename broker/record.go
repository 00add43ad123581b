package broker

import (
	"bufio"
	"encoding/json"
	"io"
	"slices"
	"time"
)

// answer records the call and returns the guest's answer.
func (r *Broker) answer(entry TraceEntry, resp Response, outcome Outcome, reason string, t0 time.Time) Response {
	entry.Outcome, entry.Status, entry.Reason = outcome, resp.Status, reason
	r.record(entry, t0, r.now())
	return resp
}

// record appends a trace entry and counts it, in one critical section so the two always agree.
// t0 is the call's submission: t_ms and latency_ms count from it.
func (r *Broker) record(e TraceEntry, t0, t1 time.Time) {
	e.TMs = t0.Sub(r.start).Milliseconds()
	e.LatencyMs = float64(t1.Sub(t0).Microseconds()) / 1000
	r.mu.Lock()
	if !r.recordLocked(&e) {
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	if r.onRecord != nil {
		r.onRecord(e)
	}
}

// recordLocked counts e and appends it; false when the run is already finished.
func (r *Broker) recordLocked(e *TraceEntry) bool {
	if r.finished {
		return false // the audit line is written; a late call changes nothing
	}
	r.counters.HostCalls++
	switch e.Outcome {
	case Forwarded:
		r.counters.Forwarded++
	case Shed:
		r.counters.Shed++
	case Denied:
		r.counters.Denied++
	case OverBudget:
		r.counters.OverBudget++
	case Invalid:
		r.counters.Invalid++
	case Failed:
		r.counters.Failed++
	}
	r.trace = append(r.trace, *e)
	return true
}

// Trace returns a copy of the trace so far, in submission order (seq). Entries are recorded as
// calls end, which with concurrent calls is another order.
func (r *Broker) Trace() []TraceEntry {
	r.mu.Lock()
	t := append([]TraceEntry(nil), r.trace...)
	r.mu.Unlock()
	slices.SortFunc(t, func(a, b TraceEntry) int { return a.Seq - b.Seq })
	return t
}

// Counters returns the tallies so far; after Finish, those of the audit line.
func (r *Broker) Counters() Counters {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.countersLocked()
}

func (r *Broker) countersLocked() Counters {
	if r.finished {
		return r.final // a late call may still probe or open the breaker; it is not counted
	}
	c := r.counters
	c.BreakerOpens = r.breaker.Opens()
	return c
}

// NewAudit is the one constructor of an audit line: Broker.Finish starts from it, and so do the
// runs refused before they had a broker (the host's, the CLI's). It names the run (a fresh id
// when runID is empty), its profile and tool, and how it ended; counters, budget and duration
// are zero, as for a run that made no call. runErr's text is written as given: an error that may
// hold the credential goes through the run's broker (Finish) instead.
func NewAudit(runID, profile, tool string, status Status, runErr error) Audit {
	if runID == "" {
		runID = NewRunID()
	}
	a := Audit{RunID: runID, Profile: profile, Tool: tool, Status: status}
	if runErr != nil {
		a.Error = runErr.Error()
	}
	return a
}

// Line renders the audit as exactly one JSON line, newline-terminated. JSON escaping keeps CR, LF
// and ANSI escapes in guest-supplied text from breaking or forging lines.
func (a Audit) Line() []byte {
	b, err := json.Marshal(a.bounded()) // at most MaxAuditLine bytes (auditcap.go)
	if err != nil {
		// Unreachable: Audit holds only strings and numbers.
		b = []byte(`{"status":"error","error":"audit encoding failed"}`)
	}
	return append(b, '\n')
}

// WriteTrace writes entries as JSON lines, in call order.
func WriteTrace(w io.Writer, entries []TraceEntry) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return bw.Flush()
}
