package breaker

import (
	"strconv"
	"time"
)

// The daemon's breaker constants, as published on the product page.
const (
	DefaultCooldown = 1 * time.Second  // when Retry-After is missing or malformed
	MaxRetryAfter   = 30 * time.Second // Retry-After honoured up to this
	ProbeInterval   = 1 * time.Second  // at most one probe started per interval while shedding
	ProbeTimeout    = 2 * time.Second  // the broker gives up on a probe after this
)

// Decision is what the broker should do with one call.
type Decision int

const (
	// Forward: the breaker is closed; the call goes on to the budget check and upstream.
	Forward Decision = iota
	// Shed: answer the call with 503 and RetryAfter, never forward it.
	Shed
	// Probe: send the health check now; forward the call if it answers 2xx, shed it otherwise.
	Probe
)

func (d Decision) String() string {
	switch d {
	case Forward:
		return "forward"
	case Shed:
		return "shed"
	case Probe:
		return "probe"
	}
	return "Decision(" + strconv.Itoa(int(d)) + ")"
}

// Breaker is the circuit breaker of one run. It is not safe for concurrent use: the broker
// serialises calls to it. Use New; the zero value has no health check.
type Breaker struct {
	hasHealthCheck bool

	openedAt time.Time // start of the current (or most recent) window
	until    time.Time // the window is open while now < until; zero when closed early
	is429    bool      // the window has seen a 429, so it must never be probed

	probeInFlight  bool
	lastProbeStart time.Time

	opens int
}

// New returns a closed breaker. hasHealthCheck says whether the run's grant declares a
// health_check route, without which a window can only be waited out.
func New(hasHealthCheck bool) *Breaker {
	return &Breaker{hasHealthCheck: hasHealthCheck}
}

// Decide says what to do with a call arriving at now. When it returns Probe, the breaker marks
// a probe in flight started at now, so concurrent callers get Shed until RecordProbe.
func (b *Breaker) Decide(now time.Time) Decision {
	if !b.Open(now) {
		return Forward
	}
	if !b.mayProbe(now) {
		return Shed
	}
	b.probeInFlight = true
	b.lastProbeStart = now
	return Probe
}

// mayProbe holds when an open window may be probed at now.
func (b *Breaker) mayProbe(now time.Time) bool {
	if b.is429 || !b.hasHealthCheck || b.probeInFlight {
		return false
	}
	return now.Sub(later(b.openedAt, b.lastProbeStart)) >= ProbeInterval
}

// RecordReply records the status of a forwarded call's reply and its Retry-After header value
// ("" when absent). Only 503 and 429 matter; everything else, including a connection failure,
// which the broker never reports here, leaves the breaker alone. It returns true if this reply
// opened a new window.
func (b *Breaker) RecordReply(now time.Time, status int, retryAfter string) (opened bool) {
	if !isOverloaded(status) {
		return false
	}
	d := Cooldown(retryAfter, now)
	if b.Open(now) {
		b.extend(now.Add(d), status)
		return false
	}
	// A zero cooldown (Retry-After: 0, or a date already past) would be the empty window
	// [now, now): it sheds nothing, so it is not opened and not counted in Opens.
	if d <= 0 {
		return false
	}
	b.openWindow(now, d, status)
	return true
}

// isOverloaded reports the statuses by which an API says it cannot take this call now.
func isOverloaded(status int) bool {
	return status == 503 || status == 429
}

// openWindow starts a fresh window: nothing of the previous window carries over.
func (b *Breaker) openWindow(now time.Time, d time.Duration, status int) {
	b.openedAt = now
	b.until = now.Add(d)
	b.is429 = status == 429
	// A probe still out from an earlier window belongs to that window: its answer predates the
	// reply that opened this one, and its mark must not keep this window from being probed.
	b.probeInFlight = false
	b.opens++
}

// extend pushes the end of the open window out to end, never pulling it in.
func (b *Breaker) extend(end time.Time, status int) {
	if end.After(b.until) {
		b.until = end
	}
	if status == 429 {
		b.is429 = true
	}
}

// RecordProbe records the end of the in-flight probe at now and reports whether it closed the
// window. status is the probe's HTTP status, 0 for a timeout or error. A 2xx closes the breaker
// on the spot, unless the window has seen a 429 (possibly while the probe was out, from a call
// forwarded before the window opened): a window opened or extended by a 429 is waited out. A 429
// makes the window a 429 window; anything else leaves it open. It clears the in-flight mark.
//
// With no probe in flight (its window was replaced by a new one) the answer is stale and is
// ignored. An answer arriving after its window expired only clears the mark.
func (b *Breaker) RecordProbe(now time.Time, status int) (closed bool) {
	if !b.probeInFlight {
		return false
	}
	b.probeInFlight = false
	if !b.Open(now) {
		return false
	}
	switch {
	case status >= 200 && status <= 299 && !b.is429:
		b.until = time.Time{}
		return true
	case status == 429:
		b.is429 = true
	}
	return false
}

// RetryAfter is the Retry-After, in seconds, to send with a shed answer: the rest of the window
// rounded up to whole seconds, and at least 1 so a client never reads it as "retry now".
func (b *Breaker) RetryAfter(now time.Time) int {
	left := b.until.Sub(now)
	secs := left / time.Second
	if left%time.Second > 0 {
		secs++ // round up, so the client does not come back before the window ends
	}
	return int(max(secs, 1))
}

// Open reports whether a window is open at now, that is whether calls are being shed.
func (b *Breaker) Open(now time.Time) bool {
	return now.Before(b.until)
}

// Is429Window reports whether the current window, or the most recent one if none is open, has
// seen a 429. Read it together with Open.
func (b *Breaker) Is429Window() bool {
	return b.is429
}

// Until is the end of the current (or most recent) window; zero when a probe closed it early.
// Read it together with Open.
func (b *Breaker) Until() time.Time {
	return b.until
}

// OpenedAt is when the current (or most recent) window opened. Read it together with Open.
func (b *Breaker) OpenedAt() time.Time {
	return b.openedAt
}

// ProbeInFlight reports whether a probe is out and not yet recorded.
func (b *Breaker) ProbeInFlight() bool {
	return b.probeInFlight
}

// Opens is how many windows have been opened so far (breaker_opens on the audit line).
func (b *Breaker) Opens() int {
	return b.opens
}

// later returns the later of two instants.
func later(a, c time.Time) time.Time {
	if c.After(a) {
		return c
	}
	return a
}
