package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plimsoll/plimsoll/breaker"
	"github.com/plimsoll/plimsoll/profiles"
)

// Broker is one run's broker: its grant, credential, breaker, budget, trace and counters. It is safe
// for concurrent calls. Decisions are taken under one lock; network I/O happens outside it.
type Broker struct {
	profile    *profiles.Profile
	credHeader string   // canonical form
	credValue  []string // {"Scheme secret"}, shared read-only by every request; nil when none is sent
	redactor   *strings.Replacer
	secret     []byte
	transport  http.RoundTripper
	now        func() time.Time
	start      time.Time
	runID      string
	tool       string

	mu       sync.Mutex
	breaker  *breaker.Breaker
	spent    int // forwarded calls charged to the budget
	counters Counters
	trace    []TraceEntry
	finished bool
	final    Counters // the counters as the audit line gave them; set by Finish
}

// sharedTransport is the default upstream transport. It ignores proxy settings from the
// environment, never decompresses on the guest's behalf, and caps response headers.
var sharedTransport = &http.Transport{
	Proxy:                  nil,
	DisableCompression:     true,
	MaxResponseHeaderBytes: 64 << 10,
	MaxIdleConnsPerHost:    16,
	IdleConnTimeout:        90 * time.Second,
	ForceAttemptHTTP2:      true,
}

// New builds a Broker. The profile must come from profiles.Load*, so its routes are compiled.
func New(cfg Config) (*Broker, error) {
	p := cfg.Profile
	if p == nil || p.BaseURL == nil {
		return nil, errors.New("broker: a run needs a loaded profile")
	}
	r := &Broker{
		profile:   p,
		transport: cfg.Transport,
		now:       cfg.Now,
		runID:     cfg.RunID,
		tool:      cfg.Tool,
		breaker:   breaker.New(p.HealthCheck != nil),
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
	if secret := cfg.Secret.Value(); secret != "" {
		r.credHeader = http.CanonicalHeaderKey(p.Credential.Header)
		r.credValue = []string{p.HeaderValue(cfg.Secret)}
		r.secret = []byte(secret)
		r.redactor = strings.NewReplacer(redactions(secret)...)
	} else if p.Credential.Header != "" {
		r.credHeader = http.CanonicalHeaderKey(p.Credential.Header)
	}
	r.start = r.now()
	return r, nil
}

// Values of TraceEntry.Probe.
const (
	ProbeOK       = "ok"
	ProbeNotReady = "not_ready"
)

// Redacted replaces the secret wherever an upstream echoes it back.
const Redacted = "[redacted]"

// redactions are the replacer pairs for a secret: as is, and as Go's %q and the broker's own
// quoting render it inside error messages, where a quote or a backslash comes out escaped.
func redactions(secret string) []string {
	pairs := []string{secret, Redacted}
	for _, q := range []string{strconv.Quote(secret), strconv.QuoteToASCII(secret)} {
		if inner := q[1 : len(q)-1]; inner != secret && !slices.Contains(pairs, inner) {
			pairs = append(pairs, inner, Redacted)
		}
	}
	return pairs
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

// CallEnvelope decodes a request envelope strictly, handles it, and returns the encoded response
// envelope. This is what host_call invokes.
func (r *Broker) CallEnvelope(ctx context.Context, raw []byte) []byte {
	req, err := DecodeRequest(raw)
	if err != nil {
		return EncodeResponse(r.refuse(req, err))
	}
	return EncodeResponse(r.Call(ctx, req))
}

// Refuse records a call that was invalid before it could be decoded (over the size cap, out of
// guest memory) and returns the encoded 400 response envelope.
func (r *Broker) Refuse(reason string) []byte {
	return EncodeResponse(r.refuse(Request{}, invalidf(reason)))
}

func (r *Broker) refuse(req Request, err error) Response {
	reason := err.Error()
	var inv *InvalidError
	if errors.As(err, &inv) {
		reason = inv.Reason
	}
	t := r.now()
	resp := ownAnswer(http.StatusBadRequest, Invalid, reason, nil)
	r.record(TraceEntry{Method: safeMethod(req.Method), Path: safePath(req.Path), Outcome: Invalid,
		Status: resp.Status, Reason: reason}, t, t)
	return resp
}

// Call handles one decoded guest call: validate, grant, breaker, budget, forward, record.
func (r *Broker) Call(ctx context.Context, req Request) Response {
	if err := Validate(&req, r.credHeader); err != nil {
		return r.refuse(req, err)
	}
	t0 := r.now()
	entry := TraceEntry{Method: req.Method, Path: req.Path}
	route, ok := r.profile.Match(req.Method, req.Path)
	if !ok {
		reason := fmt.Sprintf("no granted route matches %s %s", req.Method, req.Path)
		return r.answer(entry, ownAnswer(http.StatusForbidden, Denied, reason, nil), Denied, reason, t0)
	}
	entry.Route = route.String()
	if resp, shed := r.admit(ctx, &entry, t0); shed {
		return resp
	}
	return r.forward(ctx, req, entry, t0)
}

// admit runs the breaker and budget steps. It returns shed=true with the answer to give when the
// call must not be forwarded.
func (r *Broker) admit(ctx context.Context, entry *TraceEntry, t0 time.Time) (Response, bool) {
	r.mu.Lock()
	decision := r.breaker.Decide(t0)
	r.mu.Unlock()
	if decision == breaker.Probe {
		status, ok := r.probe(ctx)
		if !ok {
			entry.Probe = ProbeNotReady
			reason := fmt.Sprintf("breaker open; health probe %s answered %s", r.profile.HealthCheck, probeResult(status))
			return r.shed(*entry, reason, t0), true
		}
		entry.Probe = ProbeOK
	} else if decision == breaker.Shed {
		return r.shed(*entry, r.shedReason(), t0), true
	}
	r.mu.Lock()
	over := r.spent >= r.profile.Budget.Calls
	if !over {
		r.spent++
	}
	r.mu.Unlock()
	if over {
		reason := fmt.Sprintf("budget of %d forwarded calls is spent", r.profile.Budget.Calls)
		return r.answer(*entry, ownAnswer(http.StatusTooManyRequests, OverBudget, reason, nil), OverBudget, reason, t0), true
	}
	return Response{}, false
}

func (r *Broker) shedReason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.breaker.Is429Window() {
		return "breaker open after upstream 429; waiting out Retry-After"
	}
	return "breaker open after upstream 503"
}

func (r *Broker) shed(entry TraceEntry, reason string, t0 time.Time) Response {
	r.mu.Lock()
	after := r.breaker.RetryAfter(r.now())
	r.mu.Unlock()
	return r.answer(entry, shedAnswer(reason, after), Shed, reason, t0)
}

func probeResult(status int) string {
	if status == 0 {
		return "nothing in time"
	}
	return fmt.Sprint(status)
}

// probe sends GET health_check with the run's credential. It is never traced or budgeted.
func (r *Broker) probe(ctx context.Context) (status int, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, breaker.ProbeTimeout)
	defer cancel()
	req, err := r.newUpstreamRequest(ctx, http.MethodGet, r.profile.HealthCheck.Pattern, "", nil, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = r.transport.RoundTrip(req); err == nil {
			status = resp.StatusCode
			drain(resp)
		}
	}
	ok = status >= 200 && status < 300
	r.mu.Lock()
	r.breaker.RecordProbe(r.now(), status)
	r.counters.Probes++
	if ok {
		r.counters.ProbesOK++
	}
	r.mu.Unlock()
	return status, ok
}

// forward sends the call upstream with the credential injected and records what came back.
func (r *Broker) forward(runCtx context.Context, req Request, entry TraceEntry, t0 time.Time) Response {
	ctx, cancel := context.WithTimeout(runCtx, r.profile.Limits.CallTimeout)
	defer cancel()
	up, err := r.newUpstreamRequest(ctx, req.Method, req.Path, req.Query, req.Headers, req.Body)
	if err != nil {
		return r.fail(entry, http.StatusBadGateway, "cannot build upstream request: "+err.Error(), t0)
	}
	resp, err := r.transport.RoundTrip(up)
	if err != nil {
		return r.failFromError(runCtx, ctx, entry, err, t0)
	}
	// The status alone says whether the API is overloaded, even if its body then fails to arrive.
	r.recordReply(resp)
	entry.UpstreamStatus = resp.StatusCode
	body, err := readCapped(resp, r.profile.Limits.MaxResponseBytes)
	if errors.Is(err, errBodyTooLarge) {
		return r.fail(entry, http.StatusBadGateway, fmt.Sprintf("upstream body is over limits.max_response_bytes (%s)", profiles.FormatSize(r.profile.Limits.MaxResponseBytes)), t0)
	}
	if err != nil {
		return r.failFromError(runCtx, ctx, entry, err, t0)
	}
	h := resp.Header // ours alone: stripped and redacted in place
	stripHopByHop(h)
	delete(h, OutcomeHeader) // it marks the broker's own answers: an upstream may not claim one
	out := Response{Status: resp.StatusCode, Headers: r.redactHeaders(h), Body: r.redactBody(body)}
	return r.answer(entry, out, Forwarded, "", t0)
}

func (r *Broker) recordReply(resp *http.Response) {
	r.mu.Lock()
	r.breaker.RecordReply(r.now(), resp.StatusCode, resp.Header.Get("Retry-After"))
	r.mu.Unlock()
}

func (r *Broker) failFromError(runCtx, callCtx context.Context, entry TraceEntry, err error, t0 time.Time) Response {
	if runCtx.Err() != nil {
		return r.fail(entry, http.StatusBadGateway, "call canceled: the run is ending", t0)
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return r.fail(entry, http.StatusGatewayTimeout, fmt.Sprintf("upstream did not answer within limits.call_timeout (%s)", r.profile.Limits.CallTimeout), t0)
	}
	return r.fail(entry, http.StatusBadGateway, "upstream gave no usable response: "+r.redactString(upstreamErr(err)), t0)
}

func (r *Broker) fail(entry TraceEntry, status int, reason string, t0 time.Time) Response {
	return r.answer(entry, ownAnswer(status, Failed, reason, nil), Failed, reason, t0)
}

// upstreamErr strips the URL wrapper: the reason names the failure, the trace names the path.
func upstreamErr(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}

func (r *Broker) newUpstreamRequest(ctx context.Context, method, path, query string, h http.Header, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, "", nil)
	if err != nil {
		return nil, err
	}
	base := r.profile.BaseURL
	u := req.URL
	*u = *base
	u.Opaque = base.Path + path // sent byte for byte: the canonical path that was matched
	u.Path, u.RawPath, u.RawQuery = "", "", query
	req.Host = base.Host
	// A fresh map, so the credential never lands in the caller's; the value slices are shared,
	// as neither the broker nor the transport writes to them.
	for name, vals := range h {
		req.Header[name] = vals
	}
	if r.credValue != nil {
		req.Header[r.credHeader] = r.credValue
	}
	if len(body) > 0 {
		req.Body = bodyReader(body)
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return bodyReader(body), nil }
	}
	return req, nil
}

func (r *Broker) redactBody(b []byte) []byte {
	if r.secret == nil || !bytes.Contains(b, r.secret) {
		return b
	}
	return bytes.ReplaceAll(b, r.secret, []byte(Redacted))
}

func (r *Broker) redactString(s string) string {
	if r.redactor == nil {
		return s
	}
	return r.redactor.Replace(s)
}

func (r *Broker) redactHeaders(h http.Header) http.Header {
	if r.redactor == nil {
		return h
	}
	var renamed []string // an upstream may echo the secret in a header name, too
	for name, vs := range h {
		for i, v := range vs {
			vs[i] = r.redactor.Replace(v) // in place: the slices are ours
		}
		if r.redactName(name) != name {
			renamed = append(renamed, name)
		}
	}
	for _, name := range renamed {
		to := r.redactName(name)
		h[to] = append(h[to], h[name]...)
		delete(h, name)
	}
	return h
}

// redactName redacts the secret in a header name, whatever its case: the transport canonicalises
// names ("x-sk-live-abc" arrives as "X-Sk-Live-Abc"), and a name is case-insensitive anyway.
func (r *Broker) redactName(name string) string {
	if !isToken(name) {
		return r.redactor.Replace(name) // a name from the transport is always a token
	}
	secret := r.secret
	i := indexFoldASCII(name, secret)
	if i < 0 {
		return name
	}
	var b strings.Builder
	for ; i >= 0; i = indexFoldASCII(name, secret) {
		b.WriteString(name[:i])
		b.WriteString(Redacted)
		name = name[i+len(secret):]
	}
	b.WriteString(name)
	return b.String()
}

// indexFoldASCII is strings.Index with ASCII letters matched in either case.
func indexFoldASCII(s string, sub []byte) int {
	if len(sub) == 0 {
		return -1
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && lowerASCII(s[i+j]) == lowerASCII(sub[j]) {
			j++
		}
		if j == len(sub) {
			return i
		}
	}
	return -1
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// answer records the call and returns the guest's answer.
func (r *Broker) answer(entry TraceEntry, resp Response, outcome Outcome, reason string, t0 time.Time) Response {
	entry.Outcome, entry.Status, entry.Reason = outcome, resp.Status, reason
	r.record(entry, t0, r.now())
	return resp
}

// record appends a trace entry and counts it, in one critical section so the two always agree.
func (r *Broker) record(e TraceEntry, t0, t1 time.Time) {
	e.TMs = t0.Sub(r.start).Milliseconds()
	e.LatencyMs = float64(t1.Sub(t0).Microseconds()) / 1000
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return // the audit line is written; a late call changes nothing
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
	e.Seq = len(r.trace) + 1
	r.trace = append(r.trace, e)
}

// Trace returns a copy of the trace so far, in call order.
func (r *Broker) Trace() []TraceEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]TraceEntry(nil), r.trace...)
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

// Finish ends the run and returns its audit line. Later calls are answered but not recorded.
func (r *Broker) Finish(status Status, runErr error) Audit {
	r.mu.Lock()
	if !r.finished {
		r.final = r.countersLocked()
		r.finished = true
	}
	c := r.final
	r.mu.Unlock()
	a := Audit{RunID: r.runID, Profile: r.profile.Name, Tool: r.tool, Status: status, Counters: c,
		BudgetCalls: r.profile.Budget.Calls, DurationMs: r.now().Sub(r.start).Milliseconds()}
	if runErr != nil {
		a.Error = r.redactString(runErr.Error())
	}
	return a
}

// safeMethod and safePath keep undecodable or refused input readable in the trace.
func safeMethod(m string) string {
	if allowedMethods[m] {
		return m
	}
	return trimQuote(m)
}

func safePath(p string) string {
	if CheckPath(p) == nil {
		return p
	}
	return trimQuote(p)
}

func trimQuote(s string) string {
	if s == "" {
		return ""
	}
	q := strings.TrimPrefix(quote(s), `"`)
	if cut, ok := strings.CutSuffix(q, `"…`); ok {
		return cut + "…"
	}
	return strings.TrimSuffix(q, `"`)
}
