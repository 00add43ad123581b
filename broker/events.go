package broker

import (
	"net/http"
	"time"

	"github.com/plimsoll/plimsoll/breaker"
)

// Kinds of BreakerEvent.
const (
	EventOpen   = "open"   // an overloaded reply opened a window
	EventExtend = "extend" // an overloaded reply pushed the open window's end out, or made it a 429 window
	EventProbe  = "probe"  // a health probe answered (or gave up)
	EventClose  = "close"  // a probe's 2xx closed the window before its end
)

// maxRetryAfterText caps the Retry-After text an event keeps: it comes from the API.
const maxRetryAfterText = 40

// BreakerEvent is one thing the run's breaker did. Probes and the breaker's transitions are not
// calls, so they are never in the call trace (the product page's rule); they are recorded here,
// beside it, so that a run can be drawn from both. A window ends at its last UntilMs unless a
// close event ends it first.
type BreakerEvent struct {
	TMs  int64  `json:"t_ms"` // since run start
	Kind string `json:"kind"`
	// Status is the overloaded reply's status (open, extend) or the probe's (probe; 0 when it
	// gave no answer in time).
	Status int `json:"status,omitempty"`
	// RetryAfter is the reply's Retry-After as sent (redacted, capped), "" when it had none.
	RetryAfter string `json:"retry_after,omitempty"`
	// CooldownMs is the wait the reply asked for once clamped to 0–30 s (1 s when missing or
	// malformed); Clamped says the clamp shortened it.
	CooldownMs int64 `json:"cooldown_ms,omitempty"`
	Clamped    bool  `json:"clamped,omitempty"`
	UntilMs    int64 `json:"until_ms,omitempty"` // the window's end after this event (open, extend)
	Window429  bool  `json:"window_429,omitempty"`
	// OK and LatencyMs describe a probe: OK when the breaker took it as ready (a 2xx, and no 429
	// reached the window meanwhile).
	OK        bool    `json:"ok,omitempty"`
	LatencyMs float64 `json:"latency_ms,omitempty"`
}

// BreakerEvents returns a copy of the run's breaker events, in time order.
func (r *Broker) BreakerEvents() []BreakerEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]BreakerEvent(nil), r.events...)
}

// recordReply feeds a forwarded call's reply to the breaker and notes what it did.
func (r *Broker) recordReply(resp *http.Response) {
	ra := resp.Header.Get("Retry-After")
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	b := r.breaker
	wasOpen, until, was429 := b.Open(now), b.Until(), b.Is429Window()
	opened := b.RecordReply(now, resp.StatusCode, ra)
	kind := EventExtend
	switch {
	case opened:
		kind = EventOpen
	case !wasOpen || (b.Until().Equal(until) && b.Is429Window() == was429):
		return // a 2xx, an empty window, or a reply that changed nothing
	}
	asked, given := breaker.ParseRetryAfter(ra, now)
	cool := breaker.Cooldown(ra, now)
	r.noteLocked(BreakerEvent{TMs: r.sinceStart(now), Kind: kind, Status: resp.StatusCode,
		RetryAfter: r.retryAfterText(ra), CooldownMs: cool.Milliseconds(), Clamped: given && asked > cool,
		UntilMs: r.sinceStart(b.Until()), Window429: b.Is429Window()})
}

// recordProbe feeds a probe's answer to the breaker, notes it and the close it caused, and
// returns the breaker's word on it: ok only when the window is closed now. A 2xx does not close
// a window a 429 reached while the probe was out.
func (r *Broker) recordProbe(started time.Time, status int) (ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	closed := r.breaker.RecordProbe(now, status)
	ok = closed || (status >= 200 && status < 300 && !r.breaker.Open(now))
	r.noteLocked(BreakerEvent{TMs: r.sinceStart(started), Kind: EventProbe, Status: status, OK: ok,
		LatencyMs: float64(now.Sub(started).Microseconds()) / 1000})
	if closed {
		r.noteLocked(BreakerEvent{TMs: r.sinceStart(now), Kind: EventClose})
	}
	return ok
}

func (r *Broker) noteLocked(e BreakerEvent) {
	if !r.finished {
		r.events = append(r.events, e)
	}
}

func (r *Broker) sinceStart(t time.Time) int64 { return t.Sub(r.start).Milliseconds() }

func (r *Broker) retryAfterText(v string) string {
	if len(v) > maxRetryAfterText {
		v = v[:maxRetryAfterText]
	}
	return r.redactString(v)
}
