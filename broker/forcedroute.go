package broker

import (
	"time"

	"github.com/plimsoll/plimsoll/breaker"
)

// ForcedRouteReason starts the trace reason of a call shed because the operator forced its route
// pattern open; the route and the operator's reason follow.
const ForcedRouteReason = "forced open by the operator on route "

// routeForced sheds a call whose granted route the operator forced open, before the breaker and
// the budget, exactly as a profile forced open is shed: no probe, no budget, Retry-After 30.
func (r *Broker) routeForced(entry TraceEntry, t0 time.Time) (Response, bool) {
	if r.routeOpen == nil {
		return Response{}, false
	}
	why, open := r.routeOpen(entry.Route)
	if !open {
		return Response{}, false
	}
	r.mu.Lock()
	if !r.finished {
		r.forced = why
	}
	r.mu.Unlock()
	reason := ForcedRouteReason + entry.Route + ": " + why
	retry := int(breaker.MaxRetryAfter / time.Second)
	return r.answer(entry, shedAnswer(reason, retry), Shed, reason, t0), true
}
