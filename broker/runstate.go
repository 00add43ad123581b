package broker

import "time"

// Values of State.Breaker.
const (
	BreakerClosed    = "closed"     // calls go on
	BreakerOpen      = "open"       // calls are shed until BreakerUntil; a probe may close it early
	Breaker429Window = "429_window" // open after a 429: waited out, never probed
	BreakerProbing   = "probing"    // open, and a health probe is out now
)

// State is a live snapshot of one run for an operator: the counters the audit line would give
// now, the breaker, and the calls submitted and not yet answered.
type State struct {
	RunID        string    `json:"run_id"`
	Profile      string    `json:"profile"`
	Tool         string    `json:"tool"`
	Start        time.Time `json:"start"`
	ElapsedMs    int64     `json:"elapsed_ms"`
	Counters     Counters  `json:"counters"`
	BudgetCalls  int       `json:"budget_calls"`
	Breaker      string    `json:"breaker"`
	BreakerUntil time.Time `json:"breaker_until,omitzero"` // set while the breaker is open
	// BreakerOpenedAt is when the open window opened; set while the breaker is open.
	BreakerOpenedAt time.Time `json:"breaker_opened_at,omitzero"`
	InFlight        int       `json:"calls_in_flight"`
	Finished        bool      `json:"finished,omitempty"`
}

// State returns the run's snapshot. It is read-only and safe to call from any goroutine, at any
// time, also after Finish (then with the audit line's counters and nothing in flight).
func (r *Broker) State() State {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := State{RunID: r.runID, Profile: r.profile.Name, Tool: r.tool, Start: r.start,
		ElapsedMs: now.Sub(r.start).Milliseconds(), Counters: r.countersLocked(),
		BudgetCalls: r.profile.Budget.Calls, Breaker: BreakerClosed, Finished: r.finished}
	if !r.finished {
		// Every numbered call is recorded exactly once, when it is answered.
		st.InFlight = max(r.submitted-r.counters.HostCalls, 0)
	}
	if b := r.breaker; b.Open(now) {
		st.BreakerUntil, st.BreakerOpenedAt = b.Until(), b.OpenedAt()
		switch {
		case b.ProbeInFlight():
			st.Breaker = BreakerProbing
		case b.Is429Window():
			st.Breaker = Breaker429Window
		default:
			st.Breaker = BreakerOpen
		}
	}
	return st
}
