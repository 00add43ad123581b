package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// The fleet link (issue 27): with Config.Fleet, force-open and clear are written to the fleet's
// bucket and every replica, this one included, applies them from its watch into the same flag
// cells the runs read. Without it, the flags stay local exactly as before.

// joinFleet joins the fleet and applies its current flags; Run calls it before the listeners are
// bound, so /readyz is never ready with the fleet's flags missing.
func (s *Server) joinFleet(ctx context.Context) error {
	if s.cfg.Fleet == nil {
		return nil
	}
	f, err := fleet.Join(ctx, *s.cfg.Fleet, s.applyFleet)
	if err != nil {
		return &ConfigError{Flag: "fleet", Reason: err.Error()}
	}
	s.fleet = f
	if err := f.OnReload(s.reloadAskedByFleet); err != nil {
		f.Close()
		return &ConfigError{Flag: "fleet", Reason: err.Error()}
	}
	if err := f.Heartbeat(ctx, s.fleetStatus, s.log.Warn); err != nil {
		f.Close()
		return &ConfigError{Flag: "fleet", Reason: err.Error()}
	}
	if err := s.shareQuotas(ctx, f); err != nil { // quota.go
		f.Close()
		return &ConfigError{Flag: "fleet", Reason: err.Error()}
	}
	s.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "plimsoll_fleet_degraded",
		Help: "1 while the fleet's NATS is unreachable: the replica serves with its last known flags."},
		func() float64 { return b2f(f.Degraded() != "") }))
	s.log.Info("joined the fleet: operator flags are shared", "fleet", s.cfg.Fleet.Name, "replica", s.cfg.Fleet.Replica)
	return nil
}

func (s *Server) leaveFleet() {
	if s.fleet != nil {
		s.quotas.stopSharing()
		s.fleet.Close()
	}
}

// applyFleet applies one change from the bucket to the local flag cells.
func (s *Server) applyFleet(c fleet.Change) {
	cells, key := s.plane.flags, c.Flag.Profile
	if c.Flag.Route != "" {
		cells, key = s.plane.routes, routeKey(c.Flag.Profile, c.Flag.Route)
	}
	if c.Set {
		cells.set(key, c.Flag.Reason, c.Flag.Since)
	} else {
		cells.clear(key)
	}
}

// shareFlag writes an operator's force-open (set) or clear to the fleet, if there is one; the
// local cells are changed by the caller either way, so the answer reflects the action at once.
func (s *Server) shareFlag(r *http.Request, profile, route, reason string, set bool, since time.Time) error {
	if s.fleet == nil {
		return nil
	}
	if !set {
		return s.fleet.Clear(r.Context(), profile, route)
	}
	return s.fleet.Set(r.Context(), fleet.Flag{Profile: profile, Route: route, Reason: reason,
		Operator: r.Header.Get("Plimsoll-Operator"), Since: since})
}

// fleetRefused answers an action the fleet's bucket did not take: the local flag is changed,
// the other replicas may not have it.
func fleetRefused(w http.ResponseWriter, err error) {
	refuse(w, http.StatusServiceUnavailable, "fleet", fmt.Sprint("the action holds on this replica only; the fleet's bucket refused it: ", err))
}

// fleetStatus is what this replica's heartbeat says: its live runs, its profile set's digest, its
// open breaker windows and its API limits. Building it also re-divides the limits: each API's
// bulkhead takes its share of the fleet's limit from the roster as of this beat.
func (s *Server) fleetStatus() fleet.Status {
	st := fleet.Status{LiveRuns: s.adm.Stats().Live, Digest: s.profileSetDigest(), Windows: s.plane.windows()}
	s.rt.Limits().Share(func(l broker.LimitState) bulkhead.Share {
		own := fleet.APILimit{Profile: l.Profile, Route: l.Route, Learned: l.Learned, Demand: l.InFlight + l.Queued}
		st.Limits = append(st.Limits, own)
		return s.fleet.Share(own)
	}, time.Now())
	sort.Slice(st.Limits, func(i, j int) bool { // a stable order for admin state
		a, b := st.Limits[i], st.Limits[j]
		return a.Profile < b.Profile || (a.Profile == b.Profile && a.Route < b.Route)
	})
	return st
}

// windows sums the live runs' open breaker windows per profile, for the heartbeat: the state
// most worth an operator's eye (probing, then 429_window, then open), the earliest opening and
// the latest end.
func (cp *controlPlane) windows() []fleet.Window {
	cp.mu.Lock()
	states := make([]func() broker.State, 0, len(cp.live))
	for _, r := range cp.live {
		states = append(states, r.state)
	}
	cp.mu.Unlock()
	rank := map[string]int{broker.BreakerOpen: 1, broker.Breaker429Window: 2, broker.BreakerProbing: 3}
	byProfile := map[string]*fleet.Window{}
	for _, state := range states {
		st := state() // the broker's own lock; never under the plane's
		if st.Breaker == broker.BreakerClosed {
			continue
		}
		w := byProfile[st.Profile]
		if w == nil {
			w = &fleet.Window{Profile: st.Profile, State: st.Breaker, OpenedAt: st.BreakerOpenedAt}
			byProfile[st.Profile] = w
		}
		w.Runs++
		if rank[st.Breaker] > rank[w.State] {
			w.State = st.Breaker
		}
		if st.BreakerOpenedAt.Before(w.OpenedAt) {
			w.OpenedAt = st.BreakerOpenedAt
		}
		if st.BreakerUntil.After(w.Until) {
			w.Until = st.BreakerUntil
		}
	}
	out := make([]fleet.Window, 0, len(byProfile))
	for _, w := range byProfile {
		out = append(out, *w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Profile < out[j].Profile })
	return out
}

// profileSetDigest is a sha256 over the names and served contents of every loaded profile, so two
// replicas serving the same files show the same digest.
func (s *Server) profileSetDigest() string {
	files, _ := s.store.State()
	h := sha256.New()
	for _, f := range files { // sorted by file
		if f.Version > 0 {
			fmt.Fprintf(h, "%s\x00%x\n", f.Name, f.digest)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// FleetState is this replica's view of its fleet in GET /admin/state.
type FleetState struct {
	Name     string `json:"name"`
	Replica  string `json:"replica"`
	Degraded string `json:"degraded,omitempty"` // why NATS is unreachable; the last known flags hold meanwhile
	Digest   string `json:"digest"`             // this replica's profile set; replicas serving another are marked
	// Warning names a fleet misconfiguration, such as two live replicas with one name.
	Warning  string         `json:"warning,omitempty"`
	Replicas []fleet.Member `json:"replicas"` // every replica's last heartbeat, stale ones marked
}

func (s *Server) fleetState() *FleetState {
	if s.fleet == nil {
		return nil
	}
	st := &FleetState{Name: s.cfg.Fleet.Name, Replica: s.cfg.Fleet.Replica, Degraded: s.fleet.Degraded(),
		Digest: s.profileSetDigest(), Replicas: s.fleet.Members()}
	if s.fleet.NameShared() {
		st.Warning = fmt.Sprintf("another live replica is also named %q: give each a --replica of its own", st.Replica)
	}
	return st
}

// FleetReload is the fleet part of POST /admin/reload's answer: every other live replica's
// outcome, and the replicas that did not answer in time.
type FleetReload struct {
	Digest   string              `json:"digest"` // the asking replica's profile set after its reload
	Replicas []fleet.ReloadReply `json:"replicas"`
	Missing  []string            `json:"missing,omitempty"`
	Error    string              `json:"error,omitempty"` // the reload could not be sent to the fleet
}

// reloadFleet sends an operator's reload to the other replicas and gathers their answers.
func (s *Server) reloadFleet(ctx context.Context) *FleetReload {
	if s.fleet == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, fleet.ReloadWait)
	defer cancel()
	fr := &FleetReload{Digest: s.profileSetDigest(), Replicas: []fleet.ReloadReply{}}
	replies, missing, err := s.fleet.Reload(ctx, fr.Digest)
	if err != nil {
		fr.Error = err.Error()
	}
	fr.Replicas = append(fr.Replicas, replies...)
	fr.Missing = missing
	return fr
}

// reloadAskedByFleet reloads profiles and clients for a reload another replica's operator asked.
func (s *Server) reloadAskedByFleet() fleet.ReloadReply {
	prof, err := s.store.ReloadAll()
	if err != nil {
		s.log.Error("reload asked by the fleet failed", "error", err.Error())
		return fleet.ReloadReply{Digest: s.profileSetDigest(), Error: err.Error()}
	}
	cl := s.reloadClients()
	s.log.Info("reload asked by the fleet", "added", len(prof.Added), "changed", len(prof.Changed),
		"removed", len(prof.Removed), "refused", len(prof.Refused), "clients_refused", cl.Refused != nil)
	return fleet.ReloadReply{Digest: s.profileSetDigest(), Refused: len(prof.Refused)}
}
