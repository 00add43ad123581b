package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// StatusRunning is GET /v1/runs/{id}'s status for a run started with "wait": false that has not
// ended yet.
const StatusRunning broker.Status = "running"

// maxDetachedLog is how much of a running run's log GET /v1/runs/{id} shows: the tail.
const maxDetachedLog = 64 << 10

// detachedRuns are the runs started with "wait": false, from their 202 until their result is in
// the recent runs.
type detachedRuns struct {
	mu   sync.Mutex
	byID map[string]*detachedRun
}

// detachedRun is what GET /v1/runs/{id} shows of a run while it runs.
type detachedRun struct {
	client  string
	profile string

	mu      sync.Mutex
	state   func() broker.State // nil until the run's broker exists
	trace   []broker.TraceEntry
	log     []byte        // the last maxDetachedLog bytes
	dropped int           // log bytes cut from the front, so offsets stay absolute
	changed chan struct{} // closed and replaced at every call, log write and the end
	ended   bool          // its result is in the recent runs
}

// RunningAnswer is GET /v1/runs/{id}'s answer for a run that has not ended: its live state (as
// the admin plane shows it), the calls and the log so far.
type RunningAnswer struct {
	Status broker.Status `json:"status"` // "running"
	RunState
	Trace []broker.TraceEntry `json:"trace"`
	Log   string              `json:"log"`
}

func (d *detachedRuns) add(runID, client, profile string) *detachedRun {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byID == nil {
		d.byID = map[string]*detachedRun{}
	}
	r := &detachedRun{client: client, profile: profile, changed: make(chan struct{})}
	d.byID[runID] = r
	return r
}

// get is the running run id of client, or nil.
func (d *detachedRuns) get(id, client string) *detachedRun {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.byID[id]; ok && r.client == client {
		return r
	}
	return nil
}

func (d *detachedRuns) remove(runID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.byID, runID)
}

// view is the running run id of client; another client's run is not found.
func (d *detachedRuns) view(id, client string) (RunningAnswer, bool) {
	r := d.get(id, client)
	if r == nil {
		return RunningAnswer{}, false
	}
	return r.view(id), true
}

func (r *detachedRun) view(id string) RunningAnswer {
	r.mu.Lock()
	state := r.state
	a := RunningAnswer{Status: StatusRunning, Trace: append([]broker.TraceEntry{}, r.trace...), Log: string(r.log)}
	r.mu.Unlock()
	if state == nil { // admitted, its broker not made yet
		a.RunState = RunState{RunID: id, Client: r.client, Profile: r.profile, Breaker: broker.BreakerClosed}
		return a
	}
	a.RunState = runStateOf(r.client, state()) // the broker's own lock; never under ours
	return a
}

func (r *detachedRun) started(state func() broker.State) {
	r.mu.Lock()
	r.state = state
	r.mu.Unlock()
}

func (r *detachedRun) call(e broker.TraceEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trace = append(r.trace, e)
	r.notifyLocked()
}

func (r *detachedRun) logged(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, p...)
	if over := len(r.log) - maxDetachedLog; over > 0 {
		r.log = append(r.log[:0], r.log[over:]...)
		r.dropped += over
	}
	r.notifyLocked()
}

// finished marks the run ended, once its result is in the recent runs.
func (r *detachedRun) finished() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	r.notifyLocked()
}

func (r *detachedRun) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// since is what a stream that has sent calls calls and logAt log bytes has not: the calls after,
// the log from logAt (or from the oldest byte kept), the log offset after it, whether the run
// has ended, and a channel closed at the next change.
func (r *detachedRun) since(calls, logAt int) ([]broker.TraceEntry, []byte, int, bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := max(logAt-r.dropped, 0)
	return append([]broker.TraceEntry{}, r.trace[calls:]...), append([]byte{}, r.log[from:]...),
		r.dropped + len(r.log), r.ended, r.changed
}

// stream sends the run as POST /v1/runs's NDJSON answer does, from its start (as far as kept)
// and as it goes on: log lines and calls, then the result line.
func (s *Server) streamDetached(w http.ResponseWriter, r *http.Request, id string, d *detachedRun, c *Client) {
	st := newStreamer(w, id)
	calls, logAt := 0, 0
	for {
		more, log, next, ended, changed := d.since(calls, logAt)
		for _, e := range more {
			st.call(e)
		}
		st.log(log)
		calls, logAt = calls+len(more), next
		if ended {
			break
		}
		select {
		case <-changed:
		case <-r.Context().Done(): // the client left: end the stream's writer, nothing more to say
			st.finish(runAnswer{RunID: id, Status: StatusRunning})
			return
		}
	}
	a, ok := s.recent.get(id, c.Name)
	if !ok { // pushed out of the recent runs already: the stream says so rather than end silently
		a = runAnswer{RunID: id, Status: broker.StatusError, Error: "the run has ended and its result is no longer kept"}
	}
	st.finish(a)
}

// detach answers 202 with the run's id and Location, and runs it on: the client may leave. It
// owns the admission slot (release) from here. The run is journaled and audited as any other,
// counts for the drain, and its result is then GET /v1/runs/{id}'s answer. giveBack returns the
// run's quota unit if it is refused before it starts.
func (s *Server) detach(w http.ResponseWriter, r *http.Request, c *Client, p *profiles.Profile, req runRequest, release, giveBack func()) {
	if !s.runs.enter() { // held until the run ends, not until this answer
		release()
		giveBack()
		w.Header().Set("Retry-After", retryDraining)
		refuse(w, http.StatusServiceUnavailable, "", "the daemon is shutting down")
		return
	}
	runID := broker.NewRunID()
	if s.journal != nil {
		err := s.journal.Begin(journalEntry{RunID: runID, Client: c.Name, Profile: p.Name, Tool: req.Tool.Name, ToolDigest: req.Digest, Start: time.Now().UTC()})
		if err != nil {
			s.runs.leave()
			release()
			giveBack()
			s.log.Error("journal write failed: run refused", "error", err.Error())
			refuse(w, http.StatusInternalServerError, "", "the daemon cannot journal the run")
			return
		}
	}
	d := s.detached.add(runID, c.Name, p.Name)
	opts := s.plane.runOptions(runID, c.Name, p.Name)
	opts.Quota = s.callsQuota(c)
	opts.Criticality = tierFrom(r.Header.Get(HeaderCriticality)) // the API limit's tier, as a waited run's
	onStart := opts.OnStart
	opts.OnStart = func(state func() broker.State) { onStart(state); d.started(state) }
	opts.OnCall, opts.OnLog = d.call, d.logged
	go func() {
		defer s.runs.leave()
		defer release()
		ctx, cancel := s.runContext(context.Background(), req.Timeout) // not the request's: it has been answered
		defer cancel()
		t0 := time.Now()
		res := s.rt.RunWith(ctx, req.Tool, p, req.Input, opts)
		release() // the run has ended: its slot is free before its audit line, as a waited run's
		s.plane.ended(runID)
		s.finish(c, res, time.Since(t0))
		d.finished()
		s.detached.remove(runID) // after finish: the recent runs answer for it now
	}()
	w.Header().Set("Location", "/v1/runs/"+runID)
	writeJSON(w, http.StatusAccepted, map[string]any{"run_id": runID, "status": StatusRunning})
}
