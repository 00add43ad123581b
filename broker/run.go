package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/plimsoll/plimsoll/breaker"
	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/profiles"
)

// Broker is one run's broker: its grant, credential, breaker, budget, trace and counters. It is safe
// for concurrent calls. Decisions are taken under one lock; network I/O happens outside it.
//
// This file holds the run's lifecycle (New, Call, Finish). The rest is split by concern:
// gate.go (breaker and budget), upstream.go (forward, probe, response reading),
// redact.go, record.go (trace, counters, audit line), request.go, path.go and headers.go (what a
// request may be), response.go (what the guest gets back).
type Broker struct {
	profile     *profiles.Profile
	credHeader  string          // canonical form
	credValue   []string        // {"Scheme secret"}, shared read-only by every request; nil when none is sent
	allowed     map[string]bool // request headers a tool may send: the defaults and the profile's
	redactor    *redactor       // nil when the run sends no secret
	transport   http.RoundTripper
	now         func() time.Time
	start       time.Time
	runID       string
	tool        string
	onRecord    func(TraceEntry)      // optional live view of the trace
	forcedOpen  func() (string, bool) // the operator's flag for the profile; nil when none
	quota       func() error          // the client's calls quota; nil when none
	approver    Approver              // asks a person about gated calls; nil refuses them
	traceParent []string              // sent on forwarded calls; nil unless the profile propagates it

	limits    *Limits                     // the process's per-API limits; nil when none (limit.go)
	tier      bulkhead.Tier               // the run's criticality at the API limit
	routeOpen func(string) (string, bool) // the operator's flag per route pattern (forcedroute.go)

	mu        sync.Mutex
	breaker   *breaker.Breaker
	submitted int // calls numbered so far (Submit)
	spent     int // forwarded calls charged to the budget
	counters  Counters
	trace     []TraceEntry
	events    []BreakerEvent // probes and breaker transitions, beside the trace (events.go)
	finished  bool
	final     Counters // the counters as the audit line gave them; set by Finish
	forced    string   // the operator's reason of the last call shed as forced open
	approvals ApprovalCounts
}

// New builds a Broker. The profile must come from profiles.Load*, so its routes are compiled.
func New(cfg Config) (*Broker, error) {
	p := cfg.Profile
	if p == nil || p.BaseURL == nil {
		return nil, errors.New("broker: a run needs a loaded profile")
	}
	r := &Broker{
		profile:    p,
		transport:  cfg.Transport,
		now:        cfg.Now,
		runID:      cfg.RunID,
		tool:       cfg.Tool,
		onRecord:   cfg.OnRecord,
		forcedOpen: cfg.ForcedOpen,
		quota:      cfg.Quota,
		approver:   cfg.Approver,
		allowed:    allowedHeaders(p),
		breaker:    breaker.New(p.HealthCheck != nil),
	}
	r.limits, r.tier, r.routeOpen = cfg.Limits, cfg.Criticality, cfg.ForcedRoute // limit.go, forcedroute.go

	if p.PropagateTrace && cfg.TraceParent != "" {
		r.traceParent = []string{cfg.TraceParent}
	}
	if r.transport == nil {
		r.transport = sharedTransport
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.runID == "" {
		r.runID = NewRunID()
	}
	if p.Credential.Header != "" {
		r.credHeader = http.CanonicalHeaderKey(p.Credential.Header)
	}
	if secret := cfg.Secret.Value(); secret != "" {
		r.credValue = []string{p.HeaderValue(cfg.Secret)}
		r.redactor = newRedactor(secret)
	}
	r.start = r.now()
	return r, nil
}

// NewRunID returns a random run id.
func NewRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// String names the run without its credential, so a Broker printed by mistake leaks nothing.
func (r *Broker) String() string { return "broker.Broker{" + r.runID + " " + r.profile.Name + "}" }

// GoString is String, for %#v.
func (r *Broker) GoString() string { return r.String() }

// ID is the run id written on the audit line.
func (r *Broker) ID() string { return r.runID }

// ticket is a call's place in the run: its trace seq, in submission order, and when it was
// submitted; the trace's t_ms and latency_ms count from then.
type ticket struct {
	seq int
	at  time.Time
}

func (r *Broker) number() ticket {
	r.mu.Lock()
	r.submitted++
	seq := r.submitted
	r.mu.Unlock()
	return ticket{seq: seq, at: r.now()}
}

// Started is a call whose decisions are taken: numbered, decoded, validated, granted, and
// admitted or not by the breaker and the budget. Complete does what is left: a health probe if
// the call was picked for one, and the forward. A call answered at once (invalid, denied, shed,
// over budget) is already recorded; Complete returns its answer.
type Started struct {
	r      *Broker
	req    Request
	entry  TraceEntry
	at     time.Time
	probe  bool      // picked to probe health_check first
	answer *Response // set when the call is answered at once
	gate   *gate     // set when the call waits for a person first (approvals)
}

// StartEnvelope decodes a request envelope strictly and takes the call's decisions now. With
// concurrent calls (ABI v2) the host starts each call as the guest submits it, so the trace's
// seq and every decision follow submission order; only the I/O overlaps.
func (r *Broker) StartEnvelope(raw []byte) *Started {
	tk := r.number()
	req, err := DecodeRequest(raw)
	if err != nil {
		return r.answered(r.refuse(tk, req, err))
	}
	return r.begin(tk, req)
}

// Answered reports whether the call was answered at submission (invalid, denied, shed, over
// budget): Complete then does no I/O and returns at once.
func (s *Started) Answered() bool { return s.answer != nil }

// CompleteEnvelope does the call's I/O and returns the encoded response envelope.
func (s *Started) CompleteEnvelope(ctx context.Context) []byte {
	return EncodeResponse(s.Complete(ctx))
}

// CallEnvelope decodes a request envelope strictly, handles it, and returns the encoded response
// envelope. This is what host_call invokes.
func (r *Broker) CallEnvelope(ctx context.Context, raw []byte) []byte {
	return r.StartEnvelope(raw).CompleteEnvelope(ctx)
}

// Refuse records a call that was invalid before it could be decoded (over the size cap, out of
// guest memory) and returns the encoded 400 response envelope.
func (r *Broker) Refuse(reason string) []byte {
	return EncodeResponse(r.refuse(r.number(), Request{}, invalidf(reason)))
}

func (r *Broker) refuse(tk ticket, req Request, err error) Response {
	reason := err.Error()
	var inv *InvalidError
	if errors.As(err, &inv) {
		reason = inv.Reason
	}
	resp := ownAnswer(http.StatusBadRequest, Invalid, reason, nil)
	r.record(TraceEntry{Seq: tk.seq, Method: safeMethod(req.Method), Path: safePath(req.Path),
		Outcome: Invalid, Status: resp.Status, Reason: reason}, tk.at, r.now())
	return resp
}

// Call handles one decoded guest call: validate, grant (route and headers), breaker, budget,
// forward, record.
func (r *Broker) Call(ctx context.Context, req Request) Response {
	return r.begin(r.number(), req).Complete(ctx)
}

func (r *Broker) answered(resp Response) *Started { return &Started{answer: &resp} }

// begin takes the decisions, as of the call's submission.
func (r *Broker) begin(tk ticket, req Request) *Started {
	if err := Validate(&req, r.credHeader); err != nil {
		return r.answered(r.refuse(tk, req, err))
	}
	if err := r.checkAllowed(req.Headers); err != nil {
		return r.answered(r.refuse(tk, req, err))
	}
	s := &Started{r: r, req: req, at: tk.at, entry: TraceEntry{Seq: tk.seq, Method: req.Method, Path: req.Path}}
	route, ok := r.profile.Match(req.Method, req.Path)
	if !ok {
		reason := fmt.Sprintf("no granted route matches %s %s", req.Method, req.Path)
		return r.answered(r.answer(s.entry, ownAnswer(http.StatusForbidden, Denied, reason, nil), Denied, reason, tk.at))
	}
	s.entry.Route = route.String()
	if resp, forced := r.routeForced(s.entry, tk.at); forced {
		return r.answered(resp)
	}
	if gated, ok := r.profile.Approvals.Gated(req.Method, req.Path); ok {
		return r.beginGated(s, gated)
	}
	a := r.gate(tk.at, true)
	if a.decision == breaker.Probe {
		s.probe = true
		return s
	}
	if resp, refused := r.refuseAtGate(s.entry, a, tk.at); refused {
		return r.answered(resp)
	}
	return s
}

// Complete does the call's I/O (the probe, if picked, then the forward) and returns the answer.
func (s *Started) Complete(ctx context.Context) Response {
	if s.answer != nil {
		return *s.answer
	}
	r := s.r
	if s.gate != nil {
		if resp, refused := r.afterApproval(ctx, s); refused {
			return resp
		}
	}
	if s.probe {
		if resp, shed := r.probeFor(ctx, &s.entry, s.at, s.gate == nil); shed {
			if s.gate != nil {
				r.refund() // charged before its approval
			}
			return resp
		}
	}
	return r.limitedForward(ctx, s)
}

// Finish ends the run and returns its audit line. Later calls are answered but not recorded.
func (r *Broker) Finish(status Status, runErr error) Audit {
	r.mu.Lock()
	if !r.finished {
		r.final = r.countersLocked()
		r.finished = true
	}
	c, forced, approvals := r.final, r.forced, r.approvalCountsLocked()
	r.mu.Unlock()
	a := NewAudit(r.runID, r.profile.Name, r.tool, status, nil)
	if runErr != nil {
		a.Error = r.redactString(runErr.Error()) // a run's error may quote an upstream's echo
	}
	a.Counters, a.BudgetCalls = c, r.profile.Budget.Calls
	a.DurationMs = r.now().Sub(r.start).Milliseconds()
	a.ForcedOpen = forced
	a.Approvals = approvals
	return a
}
