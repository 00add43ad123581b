package broker

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/plimsoll/plimsoll/breaker"
	"github.com/plimsoll/plimsoll/profiles"
)

// Approver asks a person whether one call may leave. The daemon implements it; the broker owns
// the seam, so nothing below the server knows how the person is reached. Approve blocks until a
// person answers or ctx ends (the profile's approvals.timeout, or the run's end); the broker
// treats anything but ApprovalGranted as a refusal.
type Approver interface {
	Approve(ctx context.Context, q ApprovalRequest) ApprovalAnswer
}

// ApprovalRequest is what an approver shows a person: exactly the call that will leave.
type ApprovalRequest struct {
	ID       string        `json:"id"`
	RunID    string        `json:"run_id"`
	Profile  string        `json:"profile"`
	Tool     string        `json:"tool"`
	Method   string        `json:"method"`
	Path     string        `json:"path"`
	Query    string        `json:"query,omitempty"`
	Route    string        `json:"route"`             // the approvals route that marked the call
	Headers  []string      `json:"headers,omitempty"` // HeaderLines of the tool's headers
	Summary  string        `json:"summary"`           // SummarizeBody of the call's body
	Hash     string        `json:"hash"`              // CallHash of the call; an answer names it
	Channels []string      `json:"channels"`          // the profile's approvals.channels
	Timeout  time.Duration `json:"-"`
	Deadline time.Time     `json:"deadline"`
}

// Decisions an approval can end with.
const (
	ApprovalGranted     = "granted"
	ApprovalDeclined    = "declined"
	ApprovalCanceled    = "canceled"    // the person dismissed the question: a refusal
	ApprovalTimeout     = "timeout"     // nobody answered in time, or the run ended first
	ApprovalUnavailable = "unavailable" // no channel could reach a person, or max_per_run was reached
)

// ApprovalAnswer is how an approval ended: the decision, the channel that carried it and who
// answered (as the channel names them). Reason is the person's, kept in the trace only.
type ApprovalAnswer struct {
	Decision string
	Channel  string
	By       string
	Reason   string
}

// ApprovalTrace is a gated call's approval, on its trace entry.
type ApprovalTrace struct {
	ID       string  `json:"id"`
	Channel  string  `json:"channel,omitempty"`
	WaitMs   float64 `json:"wait_ms"`
	Decision string  `json:"decision"`
	By       string  `json:"by,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	Hash     string  `json:"hash"` // CallHash of what the approver saw
}

// ApprovalCounts are the run's approvals, on its audit line when the profile has any.
type ApprovalCounts struct {
	Requested   int   `json:"requested"`
	Granted     int   `json:"granted"`
	Declined    int   `json:"declined"` // declined or canceled
	TimedOut    int   `json:"timed_out"`
	Unavailable int   `json:"unavailable"`
	WaitMs      int64 `json:"wait_ms"`
}

// The error a refused gated call's 403 body names.
func approvalError(decision string) string {
	switch decision {
	case ApprovalDeclined, ApprovalCanceled:
		return "approval_declined"
	case ApprovalTimeout:
		return "approval_timeout"
	}
	return "approval_unavailable"
}

// gate is a gated call's pending approval, asked for in Complete.
type gate struct{ q ApprovalRequest }

// beginGated takes a gated call's decisions at submission: the operator's flag, then the budget
// (charged now: a refused call costs it once), then max_per_run. The person is asked in Complete,
// and the breaker is consulted after the answer.
func (r *Broker) beginGated(s *Started, route *profiles.Route) *Started {
	if a, forced := r.forcedShed(); forced {
		resp, _ := r.refuseAtGate(s.entry, a, s.at)
		return r.answered(resp)
	}
	ap := r.profile.Approvals
	r.mu.Lock()
	a := r.spendLocked(verdict{})
	over := a.outcome == "" && r.approvals.Requested >= ap.MaxPerRun
	switch {
	case a.outcome != "":
	case over:
		r.approvals.Unavailable++ // refused unasked
	default:
		r.approvals.Requested++
	}
	r.mu.Unlock()
	if resp, refused := r.refuseAtGate(s.entry, a, s.at); refused {
		return r.answered(resp)
	}
	q := r.approvalRequest(s.req, route)
	if over {
		reason := "approvals.max_per_run is reached; the call was not shown to anyone"
		return r.answered(r.refuseApproval(s, ApprovalAnswer{Decision: ApprovalUnavailable, Reason: reason}, q, 0))
	}
	s.gate = &gate{q: q}
	return s
}

func (r *Broker) approvalRequest(req Request, route *profiles.Route) ApprovalRequest {
	ap := r.profile.Approvals
	return ApprovalRequest{ID: NewRunID(), RunID: r.runID, Profile: r.profile.Name, Tool: r.tool,
		Method: req.Method, Path: req.Path, Query: req.Query, Route: route.String(),
		Headers: HeaderLines(req.Headers), Summary: SummarizeBody(req.Body),
		Hash:     CallHash(req.Method, req.Path, req.Query, req.Headers, req.Body),
		Channels: ap.Channels, Timeout: ap.Timeout}
}

// awaitApproval asks the approver and waits at most approvals.timeout; ok is true when the call
// was granted and may go on to the breaker.
func (r *Broker) awaitApproval(ctx context.Context, s *Started) (Response, bool) {
	q := s.gate.q
	t0 := r.now()
	q.Deadline = t0.Add(q.Timeout)
	ans := ApprovalAnswer{Decision: ApprovalUnavailable, Reason: "no approver is configured for this run"}
	if r.approver != nil {
		wctx, cancel := context.WithTimeout(ctx, q.Timeout)
		ans = r.approver.Approve(wctx, q)
		if ans.Decision != ApprovalGranted && wctx.Err() != nil {
			ans = ApprovalAnswer{Decision: ApprovalTimeout, Channel: ans.Channel, Reason: "no answer in time"}
		}
		cancel()
	}
	wait := r.now().Sub(t0)
	r.countApproval(ans.Decision, wait)
	if ans.Decision != ApprovalGranted {
		return r.refuseApproval(s, ans, q, wait), false
	}
	s.entry.Approval = approvalTrace(q, ans, wait)
	return Response{}, true
}

func (r *Broker) countApproval(decision string, wait time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &r.approvals
	c.WaitMs += wait.Milliseconds()
	switch decision {
	case ApprovalGranted:
		c.Granted++
	case ApprovalDeclined, ApprovalCanceled:
		c.Declined++
	case ApprovalTimeout:
		c.TimedOut++
	default:
		c.Unavailable++
	}
}

func approvalTrace(q ApprovalRequest, ans ApprovalAnswer, wait time.Duration) *ApprovalTrace {
	return &ApprovalTrace{ID: q.ID, Channel: ans.Channel, WaitMs: float64(wait.Microseconds()) / 1000,
		Decision: ans.Decision, By: ans.By, Reason: capText(ans.Reason, 200), Hash: q.Hash}
}

// refuseApproval records a gated call that will not leave and gives the guest a 403 naming
// why, never who decided or what they wrote.
func (r *Broker) refuseApproval(s *Started, ans ApprovalAnswer, q ApprovalRequest, wait time.Duration) Response {
	if ans.Decision == "" {
		ans.Decision = ApprovalUnavailable
	}
	code := approvalError(ans.Decision)
	entry := s.entry
	entry.Approval = approvalTrace(q, ans, wait)
	body, _ := json.Marshal(struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}{code, "the call to " + q.Route + " needs a person's approval and did not get it"})
	h := http.Header{"Content-Type": {"application/json"}, OutcomeHeader: {string(Denied)}}
	return r.answer(entry, Response{Status: http.StatusForbidden, Headers: h, Body: body}, Denied, code, s.at)
}

// approvalCountsLocked returns the run's approvals for the audit line; nil when the profile has none.
func (r *Broker) approvalCountsLocked() *ApprovalCounts {
	if r.profile.Approvals == nil {
		return nil
	}
	c := r.approvals
	return &c
}

// capText cuts s to at most n bytes on a rune boundary.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !runeStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// afterApproval waits for the person, then consults the operator's flags and the breaker again:
// the world may have changed during the wait. refused is true when the call must not leave; a
// call shed after its yes is given its budget back, as any shed call.
func (r *Broker) afterApproval(ctx context.Context, s *Started) (Response, bool) {
	if resp, ok := r.awaitApproval(ctx, s); !ok {
		return resp, true
	}
	if resp, forced := r.routeForced(s.entry, s.at); forced {
		r.refund()
		return resp, true
	}
	a := r.gate(r.now(), false)
	if a.decision == breaker.Probe {
		s.probe = true
		return Response{}, false
	}
	resp, refused := r.refuseAtGate(s.entry, a, s.at)
	if refused {
		r.refund()
	}
	return resp, refused
}
