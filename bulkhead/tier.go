package bulkhead

import (
	"fmt"
	"time"
)

// Tier is a call's criticality. A higher tier displaces a lower one from a full queue, is
// admitted before it, and waits longer before it is shed.
type Tier int8

const (
	Sheddable Tier = -1 // best effort: shed first, waits half the queue timeout
	Normal    Tier = 0  // the default, and the zero value
	Critical  Tier = 1  // displaces the others, waits twice the queue timeout
	tiers          = 3
)

// idx is the tier's index in per-tier arrays.
func (t Tier) idx() int { return int(t - Sheddable) }

// Tiers lists the tiers from the least to the most critical.
var Tiers = [tiers]Tier{Sheddable, Normal, Critical}

var tierNames = [tiers]string{"sheddable", "normal", "critical"}

func (t Tier) String() string {
	if t < Sheddable || t > Critical {
		return fmt.Sprintf("Tier(%d)", int8(t))
	}
	return tierNames[t.idx()]
}

// ErrTier is matched (errors.Is) by ParseTier's errors.
var ErrTier = fmt.Errorf("unknown criticality")

// ParseTier reads a criticality name: critical, normal or sheddable, exactly as written; "" is
// Normal. It takes the same words as the daemon's run queue (server/runqueue), so a value is
// taken or refused alike wherever it arrives.
func ParseTier(s string) (Tier, error) {
	switch s {
	case "", "normal":
		return Normal, nil
	case "critical":
		return Critical, nil
	case "sheddable":
		return Sheddable, nil
	}
	q := s
	if len(q) > 40 {
		q = q[:40] + "…"
	}
	return Normal, fmt.Errorf("%w: %q is not critical, normal or sheddable", ErrTier, q)
}

// sojourn scales the queue timeout by tier: sheddable calls give up sooner, critical ones later.
func (t Tier) sojourn(base time.Duration) time.Duration {
	switch t {
	case Sheddable:
		return base / 2
	case Critical:
		return base * 2
	}
	return base
}
