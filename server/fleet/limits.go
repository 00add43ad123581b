package fleet

import (
	"slices"
	"time"

	"github.com/plimsoll/plimsoll/bulkhead"
)

// The API limit shared across the fleet (issue 27): every heartbeat carries, per API, the limit
// the replica learned and its demand (calls in flight and queued); each replica then admits its
// share of one fleet limit (ShareOf). Each replica's limit is learned from the latency the API
// shows it, which is the fleet's latency, so no digests need to travel; RATIONALE.md says why.

// APILimit is one API's limit in a replica's heartbeat.
type APILimit struct {
	Profile string `json:"profile"`
	Route   string `json:"route,omitempty"` // "" for the whole API
	Learned int    `json:"learned"`         // the fleet limit this replica learned
	Demand  int    `json:"demand"`          // its calls in flight and queued now
}

func (a APILimit) same(b APILimit) bool { return a.Profile == b.Profile && a.Route == b.Route }

// Window is one profile's open breaker windows on a replica, in its heartbeat.
type Window struct {
	Profile  string    `json:"profile"`
	State    string    `json:"state"` // open, 429_window or probing: probing if any run probes, else 429_window if any
	Runs     int       `json:"runs"`  // live runs with the window open
	OpenedAt time.Time `json:"opened_at,omitzero"`
	Until    time.Time `json:"until,omitzero"` // the latest end of its runs' windows
}

// ShareOf is this replica's (instance self) share of api's limit, from the live members'
// heartbeats and its own numbers now:
//   - the fleet limit is the median of the learned limits (its own included), and the bulkhead
//     never takes one above its own learned limit (bulkhead.Share);
//   - the fraction is half an equal part and half its part of the fleet's demand, so an idle
//     replica keeps room for its first calls and a busy one gets more; its own demand is taken
//     as its last heartbeat published it (own's until the first), so the replicas' fractions,
//     computed from the same numbers, add up to one;
//   - a member silent for more than ShareAfter at now counts for nothing (so one killed drops out
//     within StaleAfter, on the beat after); alone, the replica keeps its whole limit.
//
// A member's claims can only shrink the share, down to the bulkhead's floor of one call.
func ShareOf(members []Member, self string, own APILimit, now time.Time) bulkhead.Share {
	learned := []int{own.Learned}
	demand, others := max(own.Demand, 0), 0
	for _, m := range members {
		l, ok := m.limit(own)
		switch {
		case !ok || m.Stale || now.Sub(m.At) > ShareAfter:
		case m.Instance == self:
			demand = max(l.Demand, 0) // as published: every replica divides the same numbers
		default:
			learned = append(learned, max(l.Learned, 1))
			others += min(max(l.Demand, 0), maxDemand)
		}
	}
	total := demand + others
	n := len(learned)
	if n == 1 {
		return bulkhead.Share{}
	}
	slices.Sort(learned)
	fraction := 1 / float64(n)
	if total > 0 {
		fraction = (fraction + float64(demand)/float64(total)) / 2
	}
	return bulkhead.Share{Fleet: learned[n/2], Fraction: fraction}
}

// limit is m's heartbeat's entry for own's API.
func (m Member) limit(own APILimit) (APILimit, bool) {
	for _, l := range m.Limits {
		if l.same(own) {
			return l, true
		}
	}
	return APILimit{}, false
}

// ShareAfter is how long a member's heartbeat counts for the shares: a beat less than StaleAfter,
// since the shares are recomputed only once a beat.
const ShareAfter = StaleAfter - BeatEvery

// maxDemand bounds one member's claimed demand, so a sum cannot overflow.
const maxDemand = 1 << 20

// Share is this replica's share of own's API limit now; while NATS is unreachable it is the
// whole local limit (the zero Share): the others' last numbers may be long gone.
func (f *Fleet) Share(own APILimit) bulkhead.Share {
	if f.Degraded() != "" {
		return bulkhead.Share{}
	}
	return ShareOf(f.Members(), f.instance, own, f.now())
}
