package bulkhead

import (
	"fmt"
	"strings"
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

// ParseTier reads a criticality name; "" is Normal. Case and surrounding space are ignored, and
// "best_effort" is another name for sheddable.
func ParseTier(s string) (Tier, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "", "normal", "default":
		return Normal, nil
	case "critical":
		return Critical, nil
	case "sheddable", "best_effort", "best-effort", "low":
		return Sheddable, nil
	}
	q := s
	if len(q) > 40 {
		q = q[:40] + "…"
	}
	return Normal, fmt.Errorf("%w %q (one of critical, normal, sheddable)", ErrTier, q)
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
