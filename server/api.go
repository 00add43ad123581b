package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
	"github.com/plimsoll/plimsoll/server/mcpserver"
	"github.com/plimsoll/plimsoll/server/runqueue"
)

// Header names and media types of the API.
const (
	HeaderCriticality = "Plimsoll-Criticality"
	MediaNDJSON       = "application/x-ndjson"
	openClient        = "anonymous" // the client name on audit lines in open mode
	retryBusy         = "1"         // seconds, on a 429: a slot frees as soon as a run ends
	retryDraining     = "5"         // seconds, on a 503 while shutting down: another replica or the restart
)

func (s *Server) apiHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/runs", s.handleRun)
	mux.HandleFunc("GET /v1/runs/{id}", s.handleGetRun)
	mux.HandleFunc("GET /v1/runs/{id}/timeline", s.handleTimeline)
	mux.HandleFunc("GET /v1/profiles", s.handleProfiles)
	mux.HandleFunc("GET /v1/profiles/{name}", s.handleProfile)
	mux.Handle("/mcp", s.mcpHandler()) // streamable HTTP MCP, same bearer tokens (server/mcp.go)
	s.probes(mux, false)
	return s.counted(guardHost(mux, s.clients == nil)) // DNS rebinding (hostguard.go)
}

func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	s.mountAdmin(mux)
	s.operatorRoutes(mux)
	s.probes(mux, true)
	return s.counted(guardHost(mux, s.clients == nil || s.plane.adminToken == nil))
}

// probes serves /livez, /readyz and /metrics; on the admin listener /metrics has the
// per-profile series too, behind the admin token when there is one (metrics.go).
func (s *Server) probes(mux *http.ServeMux, admin bool) {
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", s.handleReady)
	h := promhttp.HandlerFor(s.metrics.gatherer(admin), promhttp.HandlerOpts{})
	if admin {
		h = s.adminAuth(h)
	}
	mux.Handle("GET /metrics", h)
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	switch {
	case s.draining.Load():
		http.Error(w, "draining", http.StatusServiceUnavailable)
	case !s.ready.Load():
		http.Error(w, "the JS engine is not compiled yet", http.StatusServiceUnavailable)
	default:
		io.WriteString(w, "ok\n")
	}
}

// counted records every answer by route pattern (never the raw path) and status code, as its
// status goes out: a client that has the answer finds it counted. A handler that writes
// nothing is counted when it returns (net/http answers 200).
func (s *Server) counted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, metrics: s.metrics, req: r}
		next.ServeHTTP(rec, r) // the mux sets r.Pattern before the handler writes
		rec.record(http.StatusOK)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	metrics *metrics
	req     *http.Request
	wrote   bool
}

func (r *statusRecorder) WriteHeader(code int) {
	r.record(code)
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.record(http.StatusOK) // a write without WriteHeader answers 200
	return r.ResponseWriter.Write(b)
}

// record counts the answer's status, once.
func (r *statusRecorder) record(code int) {
	if !r.wrote {
		r.wrote = true
		r.metrics.request(r.req.Pattern, code)
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// errorBody is every refusal's answer.
type errorBody struct {
	Error  string `json:"error"`
	Field  string `json:"field,omitempty"`
	Status int    `json:"status"`
}

func refuse(w http.ResponseWriter, code int, field, reason string) {
	writeJSON(w, code, errorBody{Error: reason, Field: field, Status: code})
}

func refuseErr(w http.ResponseWriter, err *RequestError) {
	refuse(w, err.Status, err.Field, err.Reason)
}

// authenticate returns the caller's client name, or answers 401 and returns false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*Client, bool) {
	if s.clients == nil {
		return &Client{Name: openClient, Profiles: []string{AllProfiles}}, true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var c *Client
	if ok {
		c = s.clients.Authenticate(strings.TrimSpace(tok))
	}
	if c == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="plimsoll"`)
		reason := "Authorization: Bearer <token> is required"
		if ok {
			reason = "the bearer token is not a client's" // the token is not echoed
		}
		refuse(w, http.StatusUnauthorized, "Authorization", reason)
		return nil, false
	}
	return c, true
}

// profileFor finds a profile the client may use, or answers 403 or 404.
func (s *Server) profileFor(w http.ResponseWriter, c *Client, name string, field string) (*profiles.Profile, bool) {
	if !c.May(name) {
		refuse(w, http.StatusForbidden, field, "client "+c.Name+" may not use profile "+name)
		return nil, false
	}
	p, ok := s.store.Get(name)
	if !ok {
		refuse(w, http.StatusNotFound, field, "no profile "+name)
		return nil, false
	}
	return p, true
}

// readRunBody checks the content type and size and decodes the body.
func (s *Server) readRunBody(w http.ResponseWriter, r *http.Request) (runRequest, *RequestError) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return runRequest{}, &RequestError{Status: http.StatusUnsupportedMediaType, Field: "Content-Type", Reason: "the body must be application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return runRequest{}, &RequestError{Status: http.StatusRequestEntityTooLarge, Field: "body", Reason: "the body is over " + profiles.FormatSize(mbe.Limit)}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return runRequest{}, &RequestError{Status: http.StatusRequestTimeout, Field: "body", Reason: "the body did not arrive within " + s.cfg.BodyTimeout.String()}
	}
	if err != nil {
		return runRequest{}, &RequestError{Status: http.StatusBadRequest, Field: "body", Reason: "reading the body: " + err.Error()}
	}
	req, err := decodeRunRequest(body)
	if err != nil {
		return runRequest{}, err.(*RequestError)
	}
	return req, nil
}

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	c, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	if !s.runs.enter() {
		s.countRefusal("v1", refused(refusedDraining, nil))
		w.Header().Set("Retry-After", retryDraining)
		refuse(w, http.StatusServiceUnavailable, "", "the daemon is shutting down")
		return
	}
	defer s.runs.leave()
	req, rerr := s.readRunBody(w, r)
	if rerr != nil {
		refuseErr(w, rerr)
		return
	}
	crit, err := runqueue.ParseCriticality(r.Header.Get(HeaderCriticality))
	if err != nil {
		s.countRefusal("v1", refused(refusedHeader, err))
		refuse(w, http.StatusBadRequest, HeaderCriticality, err.Error())
		return
	}
	p, ok := s.profileFor(w, c, req.Profile, "profile")
	if !ok {
		return
	}
	giveBack, err := s.takeRun(c) // quota.go: before a slot is taken
	if err != nil {
		s.countRefusal("v1", refused(refusedQuota, err))
		refuseQuota(w, err)
		return
	}
	release, ok := s.admit(w, r, crit)
	if !ok {
		giveBack() // refused as busy, or the client left while queued: the run never ran
		return
	}
	release = sync.OnceFunc(release)
	if !req.Wait {
		s.detach(w, r, c, p, req, release, giveBack)
		return
	}
	defer release()
	s.execute(w, r, c, p, req, release, giveBack)
}

// admit waits for a run slot, or answers 429 when the queue sheds the request.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, crit runqueue.Criticality) (func(), bool) {
	t0 := time.Now()
	release, err := s.adm.Acquire(r.Context(), crit)
	var shed *runqueue.ShedError
	switch {
	case errors.As(err, &shed):
		s.metrics.shed(shed)
		s.countRefusal("v1", refused(refusedBusy, err))
		w.Header().Set("Retry-After", retryBusy)
		refuse(w, http.StatusTooManyRequests, "", shed.Error())
		return nil, false
	case err != nil:
		s.countRefusal("v1", refused(refusedCanceled, err))
		return nil, false // the client went away while waiting
	}
	s.metrics.queueWait.WithLabelValues(crit.String()).Observe(time.Since(t0).Seconds())
	return release, true
}

// runAnswer is a run's result, as answered and as the NDJSON stream's last line.
type runAnswer struct {
	Type   string              `json:"type,omitempty"`
	RunID  string              `json:"run_id"`
	Status broker.Status       `json:"status"`
	Output json.RawMessage     `json:"output"`
	Error  string              `json:"error"`
	Log    string              `json:"log"`
	Trace  []broker.TraceEntry `json:"trace"`
	Audit  broker.Audit        `json:"audit"`
	// Truncated names what GET /v1/runs/{id} answers cut: "output" (its first bytes, as a
	// string), "log" (its tail), "trace" (its first calls); see ring.go.
	Truncated []string `json:"truncated,omitempty"`
	// Events are the run's probes and breaker transitions, beside the trace.
	Events []broker.BreakerEvent `json:"breaker_events,omitempty"`
}

// execute journals, runs, audits (synced) and answers one admitted run. The slot is released
// (release) when the run ends, before the answer is written: a slow reader holds no slot;
// giveBack returns the run's quota unit if it is refused before it starts.
func (s *Server) execute(w http.ResponseWriter, r *http.Request, c *Client, p *profiles.Profile, req runRequest, release, giveBack func()) {
	runID := broker.NewRunID()
	if s.journal != nil {
		err := s.journal.Begin(journalEntry{RunID: runID, Client: c.Name, Profile: p.Name, Tool: req.Tool.Name, ToolDigest: req.Digest, Start: time.Now().UTC()})
		if err != nil {
			s.log.Error("journal write failed: run refused", "error", err.Error())
			giveBack()
			s.countRefusal("v1", refused(refusedJournal, err))
			refuse(w, http.StatusInternalServerError, "", "the daemon cannot journal the run")
			return
		}
	}
	var st *streamer
	opts := s.plane.runOptions(runID, c.Name, p.Name)
	opts.Quota = s.callsQuota(c)
	opts.Criticality = tierFrom(r.Header.Get(HeaderCriticality)) // the API limit's tier (limits.go)
	span := s.beginRun(&opts, traceparentOf(r), p.Name, c.Name, req.Digest)
	if acceptsNDJSON(r) {
		st = newStreamer(w, runID) // stream.go: the run's callbacks never wait for the client
		opts.OnCall, opts.OnLog = st.call, st.log
	}
	ctx, cancel := s.runContext(r.Context(), req.Timeout)
	defer cancel()
	t0 := time.Now()
	res := s.rt.RunWith(ctx, req.Tool, p, req.Input, opts)
	release() // the run has ended: its slot is free before its audit line and answer go out
	s.plane.ended(runID)
	span.end(res)
	a, body := s.finish(c, res, time.Since(t0))
	if st != nil {
		st.finish(a)
		return
	}
	writeBody(w, http.StatusOK, body) // under a write deadline (clientwrite.go)
}

// finish writes the audit line (synced) and records the run; the answer may go out after it.
func (s *Server) finish(c *Client, res host.Result, took time.Duration) (runAnswer, []byte) {
	res.Audit.Client = c.Name
	return s.finishRecord(res, took)
}

// writeAudit appends a's line to the audit file, synced.
func (s *Server) writeAudit(a broker.Audit) {
	line := a.Line()
	if err := s.audit.Append(line); err != nil {
		// The line must not be lost: it goes to the log, which a shipper also keeps.
		s.log.Error("audit file write failed; audit line follows", "error", err.Error(), "audit", string(line))
	}
}

// finishRecord is finish with the audit's client names set (an MCP run's names its MCP client
// too). It returns the answer and its JSON body, encoded once: the recent-runs ring counts its
// size, and a waited run's answer is these bytes.
func (s *Server) finishRecord(res host.Result, took time.Duration) (runAnswer, []byte) {
	s.writeAudit(res.Audit)
	if s.journal != nil {
		s.journal.End(res.Audit.RunID)
	}
	s.metrics.observeRun(res.Audit, res.Trace, took.Seconds())
	a := runAnswer{RunID: res.Audit.RunID, Status: res.Audit.Status, Output: mcpserver.OutputJSON(res.Output),
		Error: res.Audit.Error, Log: string(res.Log), Trace: res.Trace, Audit: res.Audit, Events: res.BreakerEvents}
	if a.Trace == nil {
		a.Trace = []broker.TraceEntry{}
	}
	body := encodeJSON(a)
	s.recent.put(a.RunID, res.Audit.Client, a, max(len(body)-1, 0)) // the JSON's size, without the newline
	return a, body
}

// runContext ends with the request, at the drain deadline, or after the request's timeout.
func (s *Server) runContext(reqCtx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(reqCtx)
	stop := context.AfterFunc(s.runsCtx, cancel)
	if timeout > 0 {
		var tcancel context.CancelFunc
		ctx, tcancel = context.WithTimeout(ctx, timeout)
		return ctx, func() { tcancel(); stop(); cancel() }
	}
	return ctx, func() { stop(); cancel() }
}

func acceptsNDJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == MediaNDJSON {
			return true
		}
	}
	return false
}

func (s *Server) handleGetRun(w http.ResponseWriter, r *http.Request) {
	c, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	if d := s.detached.get(r.PathValue("id"), c.Name); d != nil && r.URL.Query().Get("stream") == "ndjson" {
		s.streamDetached(w, r, r.PathValue("id"), d, c)
		return
	}
	a, ok := s.recent.get(r.PathValue("id"), c.Name)
	if !ok {
		if running, ok := s.detached.view(r.PathValue("id"), c.Name); ok {
			writeJSON(w, http.StatusOK, running)
			return
		}
		// Another client's run is not found either: its existence is not disclosed.
		refuse(w, http.StatusNotFound, "id", "no recent run of yours with that id")
		return
	}
	if r.URL.Query().Get("stream") == "ndjson" { // it has ended: the stream is its result line
		newStreamer(w, a.RunID).finish(a)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// profileView is a profile as its clients see it: no credential source, no file path.
type profileView struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Routes      []string `json:"routes"`
	HealthCheck string   `json:"health_check,omitempty"`
	BudgetCalls int      `json:"budget_calls"`
}

func viewOf(p *profiles.Profile) profileView {
	v := profileView{Name: p.Name, Description: p.Description, BudgetCalls: p.Budget.Calls, Routes: []string{}}
	for _, rt := range p.Routes {
		v.Routes = append(v.Routes, rt.String())
	}
	if p.HealthCheck != nil {
		v.HealthCheck = p.HealthCheck.String()
	}
	return v
}

func (s *Server) handleProfiles(w http.ResponseWriter, r *http.Request) {
	c, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	out := []profileView{}
	for _, p := range s.store.Profiles() {
		if c.May(p.Name) {
			out = append(out, viewOf(p))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"profiles": out})
}

func (s *Server) handleProfile(w http.ResponseWriter, r *http.Request) {
	c, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	if p, ok := s.profileFor(w, c, r.PathValue("name"), "name"); ok {
		writeJSON(w, http.StatusOK, viewOf(p))
	}
}

// handleProfileState is the admin plane's view of the profile directory, errors included.
func (s *Server) handleProfileState(w http.ResponseWriter, r *http.Request) {
	files, gen := s.store.State()
	writeJSON(w, http.StatusOK, map[string]any{"generation": gen, "files": files})
}
