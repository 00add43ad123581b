package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Force-open per route pattern (issue 26): POST|DELETE /admin/profiles/{name}/routes/force-open
// with {"route": "GET /pets/*", "reason": "..."}. Like a profile's flag, it sheds the route's
// calls of live and new runs, survives reloads and is lost on restart.

func routeKey(profile, route string) string { return profile + "\x00" + route }

// routeFlag is what a run's broker reads at each call: the flag of its profile's route, if set.
func (cp *controlPlane) routeFlag(profile string) func(string) (string, bool) {
	return func(route string) (string, bool) {
		if f := cp.routes.get(routeKey(profile, route)); f != nil {
			return f.Reason, true
		}
		return "", false
	}
}

// ForceRouteAnswer is the answer to POST and DELETE /admin/profiles/{name}/routes/force-open.
type ForceRouteAnswer struct {
	Profile    string      `json:"profile"`
	Route      string      `json:"route"`
	ForcedOpen *ForcedOpen `json:"forced_open"`       // null once cleared
	Was        *ForcedOpen `json:"cleared,omitempty"` // on DELETE: the flag lifted, if any
	Note       string      `json:"note"`
}

func (s *Server) handleForceRoute(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var body struct {
		Route  string  `json:"route"`
		Reason *string `json:"reason"`
	}
	if err := decodeAdminBody(r, &body, `{"route": "GET /pets/*", "reason": "..."}`); err != nil {
		refuseErr(w, err)
		return
	}
	p, ok := s.store.Get(name)
	if !ok {
		refuse(w, http.StatusNotFound, "name", "no profile "+name+" is served")
		return
	}
	var granted []string
	for _, rt := range p.Routes {
		granted = append(granted, rt.String())
	}
	if !slices.Contains(granted, body.Route) {
		refuse(w, http.StatusBadRequest, "route", quoteRoute(body.Route)+" is not one of the profile's routes: "+someOf(granted, 10))
		return
	}
	key := routeKey(name, body.Route)
	if r.Method == http.MethodDelete {
		was := s.plane.routes.clear(key)
		if err := s.shareFlag(r, name, body.Route, "", false, time.Time{}); err != nil {
			fleetRefused(w, err)
			return
		}
		writeJSON(w, http.StatusOK, ForceRouteAnswer{Profile: name, Route: body.Route, Was: was, Note: forcedNote})
		return
	}
	reason := ""
	if body.Reason != nil {
		reason = strings.TrimSpace(*body.Reason)
	}
	if msg := checkReason(reason); msg != "" {
		refuse(w, http.StatusBadRequest, "reason", msg)
		return
	}
	f := s.plane.routes.set(key, reason, time.Now().UTC())
	if err := s.shareFlag(r, name, body.Route, reason, true, f.Since); err != nil {
		fleetRefused(w, err)
		return
	}
	s.log.Warn("route forced open by the operator: its calls are shed until cleared", "profile", name, "route", body.Route, "reason", reason)
	writeJSON(w, http.StatusOK, ForceRouteAnswer{Profile: name, Route: body.Route, ForcedOpen: &f, Note: forcedNote})
}

func quoteRoute(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// someOf lists the first n of list, and how many more there are: a refusal stays readable for a
// profile that grants hundreds of routes.
func someOf(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s, … and %d more", strings.Join(list[:n], ", "), len(list)-n)
}
