package server

import (
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/plimsoll/plimsoll/broker"
)

// What the control plane reports: GET /admin/state's snapshot and its per-profile prometheus
// series. Nothing here decides; the plane (controlplane.go) does.

// RunState is one live run as GET /admin/state shows it: the counters keyed as on the audit line.
type RunState struct {
	RunID     string `json:"run_id"`
	Client    string `json:"client"`
	Profile   string `json:"profile"`
	Tool      string `json:"tool"`
	ElapsedMs int64  `json:"elapsed_ms"`
	broker.Counters
	BudgetCalls   int       `json:"budget_calls"`
	Breaker       string    `json:"breaker"` // closed, open, 429_window, probing
	BreakerUntil  time.Time `json:"breaker_until,omitzero"`
	CallsInFlight int       `json:"calls_in_flight"`
}

func runStateOf(client string, st broker.State) RunState {
	return RunState{RunID: st.RunID, Client: client, Profile: st.Profile, Tool: st.Tool,
		ElapsedMs: st.ElapsedMs, Counters: st.Counters, BudgetCalls: st.BudgetCalls, Breaker: st.Breaker,
		BreakerUntil: st.BreakerUntil, CallsInFlight: st.InFlight}
}

// ProfileState is one profile as GET /admin/state shows it.
type ProfileState struct {
	Name     string    `json:"name"`
	File     string    `json:"file,omitempty"`
	Served   bool      `json:"served"`
	Version  int       `json:"version"` // 0: never loaded, or its file is gone
	LoadedAt time.Time `json:"loaded_at,omitzero"`
	// Error is the refusal of the file's latest content; Version is still served.
	Error    string    `json:"error,omitempty"`
	Field    string    `json:"field,omitempty"`
	FailedAt time.Time `json:"failed_at,omitzero"`

	LiveRuns           int            `json:"live_runs"`
	Runs               map[string]int `json:"runs"` // finished since start, by audit status (plimsoll_runs_total)
	BreakerWindowsOpen int            `json:"breaker_windows_open"`
	BreakerWindows429  int            `json:"breaker_windows_429"`
	ForcedOpen         *ForcedOpen    `json:"forced_open"` // null when not
	Live               []RunState     `json:"live"`
}

// AdminState is GET /admin/state's answer.
type AdminState struct {
	At         time.Time      `json:"at"`
	Generation int            `json:"generation"`
	Profiles   []ProfileState `json:"profiles"`
	Fleet      *FleetState    `json:"fleet,omitempty"` // with --fleet only (fleetlink.go)
	Quotas     *QuotaState    `json:"quotas,omitempty"`
}

// state builds the operator's snapshot; profile "" means every profile. Profiles are those in the
// directory, those forced open, and those with live runs (a removed file's runs go on).
func (s *Server) state(profile string) AdminState {
	files, gen := s.store.State()
	out := AdminState{At: time.Now().UTC(), Generation: gen, Fleet: s.fleetState(), Quotas: s.quotaState()}
	byName := map[string]*ProfileState{}
	get := func(name string) *ProfileState {
		if p := byName[name]; p != nil {
			return p
		}
		p := &ProfileState{Name: name, Runs: map[string]int{}, Live: []RunState{}}
		byName[name] = p
		return p
	}
	want := func(name string) bool { return profile == "" || name == profile }
	for _, f := range files {
		if !want(f.Name) {
			continue
		}
		p := get(f.Name)
		p.File, p.Served, p.Version, p.LoadedAt = f.File, f.Version > 0, f.Version, f.LoadedAt
		p.Error, p.Field, p.FailedAt = f.Error, f.Field, f.FailedAt
	}
	for _, name := range s.plane.flags.forced() {
		if want(name) {
			get(name)
		}
	}
	for _, r := range s.plane.liveRuns() {
		if !want(r.Profile) {
			continue
		}
		p := get(r.Profile)
		p.Live = append(p.Live, r)
		p.LiveRuns++
		if r.Breaker != broker.BreakerClosed {
			p.BreakerWindowsOpen++
			if r.Breaker == broker.Breaker429Window {
				p.BreakerWindows429++
			}
		}
	}
	for _, c := range s.metrics.runCounts() {
		if want(c.profile) {
			if p := byName[c.profile]; p != nil {
				p.Runs[c.status] = c.n
			}
		}
	}
	for name, p := range byName {
		p.ForcedOpen = s.plane.flags.get(name)
		out.Profiles = append(out.Profiles, *p)
	}
	sort.Slice(out.Profiles, func(i, j int) bool { return out.Profiles[i].Name < out.Profiles[j].Name })
	if out.Profiles == nil {
		out.Profiles = []ProfileState{}
	}
	return out
}

// liveRuns snapshots every live run, oldest first.
func (cp *controlPlane) liveRuns() []RunState {
	cp.mu.Lock()
	runs := make([]*liveRun, 0, len(cp.live))
	for _, r := range cp.live {
		runs = append(runs, r)
	}
	cp.mu.Unlock()
	out := make([]RunState, 0, len(runs))
	for _, r := range runs {
		out = append(out, runStateOf(r.client, r.state())) // the broker's own lock; never under the plane's
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ElapsedMs != out[j].ElapsedMs {
			return out[i].ElapsedMs > out[j].ElapsedMs
		}
		return out[i].RunID < out[j].RunID
	})
	return out
}

type runCount struct {
	profile, status string
	n               int
}

// runCounts reads plimsoll_runs_total itself, so the admin plane shows the number /metrics
// exports.
func (m *metrics) runCounts() []runCount {
	ch := make(chan prometheus.Metric, 64)
	go func() { m.runs.Collect(ch); close(ch) }()
	var out []runCount
	for pm := range ch {
		var d dto.Metric
		if pm.Write(&d) != nil || d.Counter == nil {
			continue
		}
		var c runCount
		for _, l := range d.Label {
			switch l.GetName() {
			case "profile":
				c.profile = l.GetValue()
			case "status":
				c.status = l.GetValue()
			}
		}
		c.n = int(d.Counter.GetValue())
		out = append(out, c)
	}
	return out
}

// planeCollector exports, per profile, the live numbers GET /admin/state shows.
type planeCollector struct{ s *Server }

var (
	descLive       = prometheus.NewDesc("plimsoll_profile_runs_live", "Runs executing now, by profile.", []string{"profile"}, nil)
	descWindows    = prometheus.NewDesc("plimsoll_breaker_windows_open", "Live runs whose breaker window is open now (probing included), by profile.", []string{"profile"}, nil)
	descWindows429 = prometheus.NewDesc("plimsoll_breaker_windows_open_429", "Of those, windows opened or extended by a 429, by profile.", []string{"profile"}, nil)
	descForced     = prometheus.NewDesc("plimsoll_profile_forced_open", "1 while an operator has forced the profile open.", []string{"profile"}, nil)
)

func (c planeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLive
	ch <- descWindows
	ch <- descWindows429
	ch <- descForced
}

func (c planeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.state("")
	for _, p := range st.Profiles {
		ch <- prometheus.MustNewConstMetric(descLive, prometheus.GaugeValue, float64(p.LiveRuns), p.Name)
		ch <- prometheus.MustNewConstMetric(descWindows, prometheus.GaugeValue, float64(p.BreakerWindowsOpen), p.Name)
		ch <- prometheus.MustNewConstMetric(descWindows429, prometheus.GaugeValue, float64(p.BreakerWindows429), p.Name)
		ch <- prometheus.MustNewConstMetric(descForced, prometheus.GaugeValue, b2f(p.ForcedOpen != nil), p.Name)
	}
}
