package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	s.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "plimsoll_fleet_degraded",
		Help: "1 while the fleet's NATS is unreachable: the replica serves with its last known flags."},
		func() float64 { return b2f(f.Degraded() != "") }))
	s.log.Info("joined the fleet: operator flags are shared", "fleet", s.cfg.Fleet.Name, "replica", s.cfg.Fleet.Replica)
	return nil
}

func (s *Server) leaveFleet() {
	if s.fleet != nil {
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

// FleetState is this replica's view of its fleet in GET /admin/state.
type FleetState struct {
	Name     string `json:"name"`
	Replica  string `json:"replica"`
	Degraded string `json:"degraded,omitempty"` // why NATS is unreachable; the last known flags hold meanwhile
}

func (s *Server) fleetState() *FleetState {
	if s.fleet == nil {
		return nil
	}
	return &FleetState{Name: s.cfg.Fleet.Name, Replica: s.cfg.Fleet.Replica, Degraded: s.fleet.Degraded()}
}
