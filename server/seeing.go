package server

import (
	"bufio"
	"embed"
	"io/fs"
	"net/http"
	"sort"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/timeline"
)

// Seeing runs: a run's chart (GET /v1/runs/{id}/timeline for its client, /admin/runs/{id}/timeline
// for the operator, live or recent), the breaker openings of recent runs, and the operator page
// at /admin/, served from the binary.

// maxOpenings is how many breaker openings of ended runs the operator page keeps.
const maxOpenings = 50

// chartCSP lets a chart carry its own inline style and nothing else: no script, no fetch.
const chartCSP = "default-src 'none'; style-src 'unsafe-inline'"

// pageCSP is the operator page's: its own script and style, its own API, blob: charts.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed operator
var operatorFiles embed.FS

// Opening is one breaker window opened by a run, as the operator page lists it.
type Opening struct {
	Profile    string    `json:"profile"`
	RunID      string    `json:"run_id"`
	Client     string    `json:"client"`
	At         time.Time `json:"at"`
	Status     int       `json:"status"`
	RetryAfter string    `json:"retry_after,omitempty"`
	CooldownMs int64     `json:"cooldown_ms"`
	Clamped    bool      `json:"clamped,omitempty"`
	Live       bool      `json:"live"`
}

func (s *Server) operatorRoutes(mux *http.ServeMux) {
	page, _ := fs.Sub(operatorFiles, "operator")
	files := http.StripPrefix("/admin/", http.FileServerFS(page))
	mux.Handle("GET /admin/{$}", pageHeaders(files))
	mux.Handle("GET /admin/page/", pageHeaders(http.StripPrefix("/admin/page/", http.FileServerFS(page))))
}

// pageHeaders serves the page's files under its CSP. The page itself holds no data and needs no
// token to load; everything it shows comes from the token-guarded /admin API.
func pageHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", pageCSP)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// handleTimeline draws a recent run of the caller's; another client's run is not found.
func (s *Server) handleTimeline(w http.ResponseWriter, r *http.Request) {
	c, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	a, ok := s.recent.get(r.PathValue("id"), c.Name)
	if !ok {
		refuse(w, http.StatusNotFound, "id", "no recent run of yours with that id")
		return
	}
	drawChart(w, r, timeline.Run{Trace: a.Trace, Events: a.Events, Audit: a.Audit})
}

// handleAdminTimeline draws any run the daemon knows: a live one as it is now, or a recent one.
func (s *Server) handleAdminTimeline(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if v := s.plane.view(id); v != nil {
		drawChart(w, r, liveChart(v))
		return
	}
	if a, ok := s.recent.lookup(id); ok {
		drawChart(w, r, timeline.Run{Trace: a.Trace, Events: a.Events, Audit: a.Audit})
		return
	}
	refuse(w, http.StatusNotFound, "id", "no live or recent run with that id")
}

// liveChart is a live run's chart so far: the counters as the audit line would give them now.
func liveChart(v host.LiveRun) timeline.Run {
	st := v.State()
	a := broker.Audit{RunID: st.RunID, Profile: st.Profile, Tool: st.Tool, Status: "running",
		Counters: st.Counters, BudgetCalls: st.BudgetCalls, DurationMs: st.ElapsedMs}
	return timeline.Run{Trace: v.Trace(), Events: v.BreakerEvents(), Audit: a}
}

// drawChart answers with the chart as SVG, or as an HTML page with ?format=html.
func drawChart(w http.ResponseWriter, r *http.Request, run timeline.Run) {
	write, ctype := timeline.WriteSVG, "image/svg+xml"
	switch r.URL.Query().Get("format") {
	case "", "svg":
	case "html":
		write, ctype = timeline.WriteHTML, "text/html; charset=utf-8"
	default:
		refuse(w, http.StatusBadRequest, "format", "want svg or html")
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Security-Policy", chartCSP)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	bw := bufio.NewWriter(w)
	_ = write(bw, run) // a client gone away is no error of ours
	bw.Flush()
}

func (s *Server) handleOpenings(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"openings": s.plane.recentOpenings()})
}

// lookup returns a recent run's answer, whoever ran it: for the operator only.
func (r *ring) lookup(id string) (runAnswer, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rr, ok := r.byID[id]
	return rr.answer, ok
}

// watch gives a live run its view; the run is live already (OnStart comes first).
func (cp *controlPlane) watch(runID string, v host.LiveRun) {
	cp.mu.Lock()
	if lr := cp.live[runID]; lr != nil {
		lr.view = v
	}
	cp.mu.Unlock()
}

func (cp *controlPlane) view(runID string) host.LiveRun {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if lr := cp.live[runID]; lr != nil {
		return lr.view
	}
	return nil
}

// rememberOpenings keeps an ended run's openings.
func (cp *controlPlane) rememberOpenings(lr *liveRun) {
	if lr == nil || lr.view == nil {
		return
	}
	ops := openingsOf(lr, false)
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.openings = append(cp.openings, ops...)
	if n := len(cp.openings) - maxOpenings; n > 0 {
		cp.openings = append(cp.openings[:0], cp.openings[n:]...)
	}
}

// recentOpenings lists the openings of live runs and of recently ended ones, newest first.
func (cp *controlPlane) recentOpenings() []Opening {
	cp.mu.Lock()
	out := append([]Opening{}, cp.openings...)
	var live []liveRun
	for _, lr := range cp.live {
		if lr.view != nil {
			live = append(live, *lr)
		}
	}
	cp.mu.Unlock()
	for _, lr := range live {
		out = append(out, openingsOf(&lr, true)...) // the broker's own lock; never under the plane's
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.After(out[j].At) })
	return out[:min(len(out), maxOpenings)]
}

func openingsOf(lr *liveRun, live bool) []Opening {
	st := lr.view.State()
	var out []Opening
	for _, e := range lr.view.BreakerEvents() {
		if e.Kind == broker.EventOpen {
			out = append(out, Opening{Profile: st.Profile, RunID: st.RunID, Client: lr.client,
				At: st.Start.Add(time.Duration(e.TMs) * time.Millisecond).UTC(), Status: e.Status,
				RetryAfter: e.RetryAfter, CooldownMs: e.CooldownMs, Clamped: e.Clamped, Live: live})
		}
	}
	return out
}
