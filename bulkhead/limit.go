package bulkhead

import (
	"math"
	"slices"
	"time"
)

// limiter learns a limit from the latencies of admitted calls.
type limiter interface {
	// sample teaches one completed call: its round trip, the calls in flight when it ended
	// (itself included), and whether the API answered overloaded (503 or 429). weight is how
	// many of the API's completions it stands for: 1, or 1/share when a fleet shares the limit
	// (this bulkhead sees only its share of the round trips the limit moves by).
	sample(now time.Time, rtt time.Duration, inflight int, overloaded bool, weight float64)
	limit() int
	baseline() time.Duration // the latency the limiter takes as the API's normal; 0 if none
}

func newLimiter(c Config, start int) limiter {
	switch c.Algorithm {
	case AIMD:
		return &aimd{latency: newLatency(), min: float64(c.Min), max: float64(c.Max), lim: float64(start)}
	case Gradient2:
		return &gradient2{latency: newLatency(), min: float64(c.Min), max: float64(c.Max), lim: float64(start)}
	}
	return fixed(start)
}

type fixed int

func (f fixed) sample(time.Time, time.Duration, int, bool, float64) {}
func (f fixed) limit() int                                          { return int(f) }
func (f fixed) baseline() time.Duration                             { return 0 }

// shortWindow is how many recent round trips the current latency is the median of: one slow
// call must not halve the limit.
const shortWindow = 15

// longWindow is the baseline's averaging span, in samples.
const longWindow = 600

// latency keeps the current (median of the short window) and the baseline (a long average).
// The baseline always learns a faster latency, but a slower one only when the API was not busy
// with our calls (fewer in flight than half the limit) or at the floor: an API's queueing under
// load is not its normal latency. Learning it anyway lets the baseline creep up under noise, and
// the limit with it, up to max. An API that became slower for good is learned once the limit
// falls to its floor or the load eases.
type latency struct {
	ring [shortWindow]float64
	n    int
	long float64 // seconds; 0 until the first sample
	sort [shortWindow]float64
}

func newLatency() latency { return latency{} }

func (l *latency) add(rtt time.Duration, idle bool, weight float64) (short float64) {
	s := rtt.Seconds()
	l.ring[l.n%shortWindow] = s
	l.n++
	k := min(l.n, shortWindow)
	buf := l.sort[:k]
	copy(buf, l.ring[:k])
	slices.Sort(buf)
	short = buf[k/2]
	switch {
	case l.long == 0:
		l.long = short
	case idle || short <= l.long:
		l.long += (short - l.long) * min(1, 2*weight/(longWindow+1)) // a window of the fleet's samples
	}
	if l.long > 2*short {
		l.long *= 0.95 // the API got much faster: do not wait a whole window to believe it
	}
	return short
}

func (l *latency) baseline() time.Duration { return time.Duration(l.long * float64(time.Second)) }

// gradient2 moves the limit toward limit×(baseline/current)+√limit, smoothed.
type gradient2 struct {
	latency
	min, max, lim float64
}

const (
	// smoothing is the share of the new estimate taken per round trip; a sample is 1/limit of
	// one, so the limit moves as fast at 800 calls/s as at 8.
	smoothing = 0.4
	backoff   = 0.9 // cut on an overloaded reply
	// headroom×√limit is how far above what the latency allows the limit reaches, so it finds
	// out whether more would be served; the limit settles near knee + headroom×√knee.
	headroom = 0.5
)

func (g *gradient2) sample(_ time.Time, rtt time.Duration, inflight int, overloaded bool, weight float64) {
	if overloaded {
		g.lim = max(g.min, g.lim*backoff)
		return
	}
	short := g.add(rtt, g.lim <= g.min || float64(inflight)*2 < g.lim, weight)
	if short <= 0 {
		return
	}
	grad := min(1, max(0.5, g.long/short))
	next := g.lim*grad + headroom*math.Sqrt(g.lim)
	if float64(inflight) < g.lim/2 && next > g.lim {
		return // the limit was not the bottleneck: no evidence it may grow
	}
	step := min(1, smoothing*weight/g.lim)
	g.lim = min(g.max, max(g.min, g.lim*(1-step)+next*step))
}

func (g *gradient2) limit() int { return int(g.lim) }

// aimd adds 1/limit per fast sample and cuts by backoff at most once per round trip on a breach
// (a call slower than 1.3× the baseline, or an overloaded reply).
type aimd struct {
	latency
	min, max, lim float64
	lastCut       time.Time
}

const aimdTolerance = 1.3

func (a *aimd) sample(now time.Time, rtt time.Duration, inflight int, overloaded bool, weight float64) {
	breach := overloaded
	if !overloaded {
		short := a.add(rtt, a.lim <= a.min || float64(inflight)*2 < a.lim, weight)
		breach = short > aimdTolerance*a.long
	}
	switch {
	case breach:
		if now.Sub(a.lastCut) >= rtt {
			a.lim = max(a.min, a.lim*backoff)
			a.lastCut = now
		}
	case float64(inflight)*2 >= a.lim:
		a.lim = min(a.max, a.lim+weight/a.lim)
	}
}

func (a *aimd) limit() int { return int(a.lim) }
