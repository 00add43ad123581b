package broker

import (
	"time"

	"github.com/plimsoll/plimsoll/breaker"
)

// ForcedRouteReason starts the trace reason of a call shed because the operator forced its route
// pattern open; the route and the operator's reason follow.
const ForcedRouteReason = "forced open by the operator on route "

// routeForced sheds a call under a route pattern the operator forced open, before the breaker
// and the budget, exactly as a profile forced open is shed: no probe, no budget, Retry-After 30.
func (r *Broker) routeForced(entry TraceEntry, t0 time.Time) (Response, bool) {
	if r.routeOpen == nil {
		return Response{}, false
	}
	route, why, open := r.forcedRoute(entry.Method, entry.Path)
	if !open {
		return Response{}, false
	}
	r.mu.Lock()
	if !r.finished {
		r.forced = why
	}
	r.mu.Unlock()
	reason := ForcedRouteReason + route + ": " + why
	retry := int(breaker.MaxRetryAfter / time.Second)
	return r.answer(entry, shedAnswer(reason, retry), Shed, reason, t0), true
}

// forcedRoute is the first granted pattern covering the call that the operator forced open.
// Every pattern is tried, not only the one that granted the call (as for approvals): forcing
// "GET /pets/*" must shed GET /pets/mine even when "GET /pets/mine" is listed before it.
func (r *Broker) forcedRoute(method, path string) (route, why string, open bool) {
	for i := range r.profile.Routes {
		rt := &r.profile.Routes[i]
		if !rt.Match(method, path) {
			continue
		}
		if why, open := r.routeOpen(rt.String()); open {
			return rt.String(), why, true
		}
	}
	return "", "", false
}
