package bulkhead_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/bulkhead"
)

// enterN enters n normal calls at now and counts those admitted at once.
func enterN(b *bulkhead.Bulkhead, n int, now time.Time) (admitted int, tickets []*bulkhead.Ticket) {
	for range n {
		tk := b.Enter(now, bulkhead.Normal)
		tickets = append(tickets, tk)
		if ok, _, _, _ := b.Result(tk); ok {
			admitted++
		}
	}
	return admitted, tickets
}

func TestShareAdmitsItsPartOfTheFleetLimit(t *testing.T) {
	b := newFixed(t, 16, 32)
	b.SetShare(bulkhead.Share{Fraction: 1.0 / 3}, at(0))
	admitted, tickets := enterN(b, 10, at(0))
	require.Equal(t, 5, admitted, "a third of 16")
	s := b.Snapshot()
	require.Equal(t, 5, s.Limit)
	require.Equal(t, 16, s.Learned)
	require.InDelta(t, 1.0/3, s.Share, 1e-9)

	b.SetShare(bulkhead.Share{}, at(1)) // NATS unreachable: back to the local limit
	require.True(t, closed(tickets[9]), "the waiting calls are admitted when the bound lifts")
	require.Equal(t, 10, b.Snapshot().InFlight)
	require.Zero(t, b.Snapshot().Share)
}

func TestShareNeverRaisesAboveTheLearnedLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		share bulkhead.Share
		want  int
	}{
		{"a fleet limit above the own one is ignored", bulkhead.Share{Fleet: 1000, Fraction: 0.5}, 5},
		{"a fleet limit below the own one is taken", bulkhead.Share{Fleet: 6, Fraction: 0.5}, 3},
		{"a tiny share keeps one call", bulkhead.Share{Fraction: 1e-9}, 1},
		{"a fleet limit alone bounds", bulkhead.Share{Fleet: 4}, 4},
		{"a fraction out of range is the whole", bulkhead.Share{Fraction: 7}, 10},
		{"a negative fleet limit is none", bulkhead.Share{Fleet: -3, Fraction: 0.5}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFixed(t, 10, 32)
			b.SetShare(tc.share, at(0))
			admitted, _ := enterN(b, 20, at(0))
			require.Equal(t, tc.want, admitted)
			require.Equal(t, tc.want, b.Snapshot().Limit)
		})
	}
}

// A lowered share drains: calls in flight keep their slots, new ones wait until below it.
func TestShareLoweredDrains(t *testing.T) {
	b := newFixed(t, 12, 32)
	_, held := enterN(b, 12, at(0))
	b.SetShare(bulkhead.Share{Fraction: 0.25}, at(1))
	waiting := b.Enter(at(2), bulkhead.Normal)
	for i := range 9 {
		b.Release(held[i], at(3), time.Millisecond, false)
		require.False(t, closed(waiting), "admitted with %d in flight over a share of 3", 12-i-1)
	}
	b.Release(held[9], at(3), time.Millisecond, false)
	require.True(t, closed(waiting))
}

// fleetSim runs replicas bulkheads (each with its part of the runs) against one in-memory API with
// a knee, in a synctest bubble, and returns the API's in-flight seen by calls in the second half.
func fleetSim(t *testing.T, cfg bulkhead.Config, replicas int, shared bool) []int {
	var seen []int
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		api := &kneeAPI{knee: simKnee, base: simBase, start: start}
		const runs, duration = 150, 4 * time.Second
		var wg sync.WaitGroup
		for r := range replicas {
			b, err := bulkhead.New(cfg)
			require.NoError(t, err)
			if shared {
				b.SetShare(bulkhead.Share{Fraction: 1 / float64(replicas)}, start)
			}
			for i := range runs / replicas {
				rng := rand.New(rand.NewPCG(uint64(r), uint64(i)))
				wg.Go(func() {
					for time.Since(start) < duration {
						tk := b.Enter(time.Now(), bulkhead.Normal)
						waitTicket(b, tk)
						if ok, _, _, _ := b.Result(tk); !ok {
							time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
							continue
						}
						b.Release(tk, time.Now(), api.call(0.9+0.2*rng.Float64()), false)
					}
				})
			}
		}
		wg.Wait()
		for i, n := range api.peak {
			if api.startAt[i] >= duration/2 {
				seen = append(seen, n)
			}
		}
	})
	return seen
}

// Three replicas calling one API with a knee of 16. Each adaptive limit alone already sees the
// fleet's latency, so together they settle near the knee plus three headrooms; sharing one learned
// limit keeps one headroom. A fixed limit of 16 per replica sends three times the knee; shared, 16.
// Deterministic (fake time), so its bounds are not timing assertions.
func TestShareKeepsAFleetNearTheKnee(t *testing.T) {
	adaptive := bulkhead.Config{Algorithm: bulkhead.Gradient2, Min: 2, Max: 64, MaxQueue: 64, QueueTimeout: 500 * time.Millisecond}
	aloneSeen, sharedSeen := fleetSim(t, adaptive, 3, false), fleetSim(t, adaptive, 3, true)
	alone, shared := percentile(aloneSeen, 99), percentile(sharedSeen, 99)
	t.Logf("gradient2, API in-flight p99 after settling, knee %d: 3 replicas alone %d, sharing %d; calls %d and %d",
		simKnee, alone, shared, len(aloneSeen), len(sharedSeen))
	require.LessOrEqual(t, shared, simKnee*3/2, "the fleet's in-flight p99 with shares")
	// Past the knee more in flight serves no more calls: a shared limit that settled serves as many.
	require.GreaterOrEqual(t, len(sharedSeen), len(aloneSeen)*9/10, "calls served in the second half, shared vs alone")

	fixed := bulkhead.Config{Algorithm: bulkhead.Fixed, Initial: simKnee, MaxQueue: 64, QueueTimeout: 500 * time.Millisecond}
	alone = percentile(fleetSim(t, fixed, 3, false), 99)
	shared = percentile(fleetSim(t, fixed, 3, true), 99)
	t.Logf("fixed %d, API in-flight p99: 3 replicas alone %d, sharing %d", simKnee, alone, shared)
	require.Greater(t, alone, simKnee*2, "three fixed limits of 16 send about three times it")
	require.LessOrEqual(t, shared, simKnee, "a third each of 16")
}

// A tiny share makes the fleet's estimated calls in flight (its own over the fraction) larger
// than an int: the estimate must saturate, not wrap negative and tell the learner "idle".
func TestATinyShareStillTeachesTheLimit(t *testing.T) {
	b, err := bulkhead.New(bulkhead.Config{Algorithm: bulkhead.AIMD, Initial: 4, Min: 2, Max: 64, MaxQueue: 8, QueueTimeout: time.Second})
	require.NoError(t, err)
	b.SetShare(bulkhead.Share{Fraction: 1e-19}, at(0))
	admitted, tickets := enterN(b, 1, at(0))
	require.Equal(t, 1, admitted)
	b.Release(tickets[0], at(10), 10*time.Millisecond, false)
	require.Greater(t, b.Snapshot().Learned, 4, "a fast completion standing for the whole fleet's calls grows the limit")
}
