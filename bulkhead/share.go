package bulkhead

import (
	"math"
	"time"
)

// Share bounds a bulkhead to its part of one limit several processes share: a fleet's replicas
// calling one API. The bulkhead then learns the whole fleet's limit (its latency is the fleet's,
// the fleet's calls in flight are estimated as its own over Fraction, and each of its round trips
// stands for 1/Fraction of the fleet's) and admits its part.
type Share struct {
	// Fleet is the limit the fleet agreed on; 0 (or more than this bulkhead learned) is its own
	// learned limit: a share never raises a bulkhead above what it learned itself.
	Fleet int
	// Fraction is this bulkhead's part, in (0, 1]. Anything else (0, NaN) means no share.
	Fraction float64
}

// whole reports whether s shares nothing: the bulkhead admits its whole learned limit.
func (s Share) whole() bool {
	return !(s.Fraction > 0 && s.Fraction < 1) && s.Fleet == 0
}

// fraction is s.Fraction, 1 when it is out of range.
func (s Share) fraction() float64 {
	if s.Fraction > 0 && s.Fraction <= 1 {
		return s.Fraction
	}
	return 1
}

// SetShare bounds the bulkhead to s from now on; the zero Share lifts the bound. Calls waiting
// are admitted at once if the bound rose; calls in flight above a lowered bound drain.
func (b *Bulkhead) SetShare(s Share, now time.Time) {
	if s.Fleet < 0 {
		s.Fleet = 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.share = s
	b.admit(now)
}

// limit is the number of calls admitted at once: the learned limit, or the share of it.
func (b *Bulkhead) limit() int {
	learned := b.lim.limit()
	if b.share.whole() {
		return learned
	}
	fleet := learned
	if b.share.Fleet > 0 && b.share.Fleet < learned {
		fleet = b.share.Fleet
	}
	return max(1, int(float64(fleet)*b.share.fraction())) // a replica never stalls: one call at least
}

// fleetInFlight estimates the whole fleet's calls in flight from this bulkhead's, for the
// learner: it learns the limit of the API the fleet shares, not of this bulkhead's part.
func (b *Bulkhead) fleetInFlight() int {
	if b.share.whole() {
		return b.inflight
	}
	return int(min(math.Round(float64(b.inflight)/b.share.fraction()), math.MaxInt32)) // a tiny fraction must not wrap an int
}
