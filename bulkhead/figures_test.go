package bulkhead_test

import (
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/bulkhead"
)

// TestFigures measures the simulated figures with 200 concurrent runs against an API with
// a knee of 16 (base latency 20 ms, so it serves 800 calls/s at best), in fake time, over seeds:
// upstream in-flight p99 after convergence (goal ≤ 24), goodput vs the API's capacity (≥ 90%),
// and time to converge from min (≤ 5 s). Fake time makes these deterministic, not load-bound.
func TestFigures(t *testing.T) {
	for _, alg := range []bulkhead.Algorithm{bulkhead.Gradient2, bulkhead.AIMD} {
		t.Run(string(alg), func(t *testing.T) {
			var worstConv time.Duration
			worstP99n, worstGood := 0, 2.0
			for _, seed := range simSeeds(t, 10) {
				s := drawSchedule(seed)
				s.runs = 200
				s.tiers = s.tiers[:0]
				for i := range s.runs {
					s.tiers = append(s.tiers, bulkhead.Tiers[i%3])
				}
				s.cfg = bulkhead.Config{Algorithm: alg, Min: 2, Max: 64, MaxQueue: 128, QueueTimeout: 2 * time.Second}
				s.duration = 6 * time.Second
				res := simulate(t, s, simKnee, simBase)
				if res.firstAtKnee < 0 {
					t.Fatalf("seed %d: the limit never reached the knee", seed)
				}
				p99 := percentile(res.api.peakAfter(res.firstAtKnee), 99)
				good := goodput(res, s.duration/2, s.duration)
				t.Logf("seed %d: converged in %s, in-flight p99 %d, goodput %.1f%%", seed, res.firstAtKnee, p99, 100*good)
				worstP99n = max(worstP99n, p99)
				worstConv = max(worstConv, res.firstAtKnee)
				worstGood = min(worstGood, good)
			}
			t.Logf("%s worst over seeds: in-flight p99 %d (goal ≤ 24), goodput %.1f%% (≥ 90%%), converge %s (≤ 5s)", alg, worstP99n, 100*worstGood, worstConv)
			if worstP99n > 24 || worstGood < 0.9 || worstConv > 5*time.Second {
				t.Errorf("%s misses a goal", alg)
			}
		})
	}
}

// peakAfter is the in-flight each call saw as it started, from the start + from on. Calls are
// logged in order, at 800/s at most; the index bound is the share of calls before from.
func (k *kneeAPI) peakAfter(from time.Duration) []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []int
	for i, at := range k.startAt {
		if at >= from {
			out = append(out, k.peak[i])
		}
	}
	return out
}

// goodput is the completions per second in [from, to) over the API's capacity at the knee.
func goodput(res simResult, from, to time.Duration) float64 {
	n := 0
	for _, l := range res.limits {
		if l.at >= from && l.at < to {
			n++
		}
	}
	capacity := float64(simKnee) / simBase.Seconds()
	return float64(n) / (to - from).Seconds() / capacity
}
