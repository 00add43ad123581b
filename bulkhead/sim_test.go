package bulkhead_test

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plimsoll/plimsoll/bulkhead"
)

// The deterministic simulation (issue 26, seed 003's standard). Each seed draws a schedule: a
// number of runs, each with a criticality, calling an in-memory API in a loop; the API serves
// `knee` calls at its base latency and slows in proportion above that (latency × in-flight/knee).
// Everything runs in a synctest bubble, so time is fake and the schedule is a function of the
// seed. A failure names its seed; PLIMSOLL_SIM_SEED=N replays it. PLIMSOLL_SIM_SEEDS sets how
// many seeds run (CI runs 1,000).

// kneeAPI is the in-memory upstream.
type kneeAPI struct {
	knee int
	base time.Duration

	mu       sync.Mutex
	inflight int
	start    time.Time
	peak     []int           // in-flight seen by each call as it started
	startAt  []time.Duration // when, from the start
	ok       int             // calls answered
}

func (k *kneeAPI) call(jitter float64) time.Duration {
	k.mu.Lock()
	k.inflight++
	n := k.inflight
	k.peak = append(k.peak, n)
	k.startAt = append(k.startAt, time.Since(k.start))
	k.mu.Unlock()
	lat := time.Duration(float64(k.base) * max(1, float64(n)/float64(k.knee)) * jitter)
	time.Sleep(lat)
	k.mu.Lock()
	k.inflight--
	k.ok++
	k.mu.Unlock()
	return lat
}

type simSchedule struct {
	seed     uint64
	runs     int
	tiers    []bulkhead.Tier
	cfg      bulkhead.Config
	duration time.Duration
}

func drawSchedule(seed uint64) simSchedule {
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	s := simSchedule{seed: seed, runs: 20 + rng.IntN(181), duration: 3 * time.Second}
	for range s.runs {
		s.tiers = append(s.tiers, bulkhead.Tiers[rng.IntN(3)])
	}
	s.cfg = bulkhead.Config{Algorithm: bulkhead.Gradient2, Min: 2, Max: 64,
		MaxQueue: rng.IntN(64), QueueTimeout: time.Duration(20+rng.IntN(400)) * time.Millisecond}
	return s
}

// simResult is what one seed measured.
type simResult struct {
	limits      []sample // the limit after each completion
	sheds       []bulkhead.Shed
	api         *kneeAPI
	forwarded   int
	firstAtKnee time.Duration // from the start until the limit first reached the knee; -1 if never
}

type sample struct {
	at    time.Duration
	limit int
}

// simulate runs one schedule in a bubble.
func simulate(t *testing.T, s simSchedule, knee int, base time.Duration) simResult {
	var res simResult
	synctest.Test(t, func(t *testing.T) {
		b, err := bulkhead.New(s.cfg)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		api := &kneeAPI{knee: knee, base: base, start: start}
		var mu sync.Mutex
		res.firstAtKnee = -1
		var wg sync.WaitGroup
		for i := range s.runs {
			rng := rand.New(rand.NewPCG(s.seed, uint64(i)))
			wg.Go(func() {
				time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond) // staggered starts
				for time.Since(start) < s.duration {
					tk := b.Enter(time.Now(), s.tiers[i])
					waitTicket(b, tk)
					admitted, _, shed, _ := b.Result(tk)
					if !admitted {
						mu.Lock()
						res.sheds = append(res.sheds, *shed)
						mu.Unlock()
						time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond) // a polite tool backs off
						continue
					}
					rtt := api.call(0.9 + 0.2*rng.Float64())
					b.Release(tk, time.Now(), rtt, false)
					lim := b.Snapshot().Limit
					mu.Lock()
					res.forwarded++
					at := time.Since(start)
					res.limits = append(res.limits, sample{at, lim})
					if lim >= knee && res.firstAtKnee < 0 {
						res.firstAtKnee = at
					}
					mu.Unlock()
					time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		res.api = api
	})
	return res
}

// waitTicket waits as the broker does: until the ticket is decided or its deadline passes.
func waitTicket(b *bulkhead.Bulkhead, tk *bulkhead.Ticket) {
	if tk.Done() == nil {
		return
	}
	timer := time.NewTimer(time.Until(tk.Deadline()))
	defer timer.Stop()
	select {
	case <-tk.Done():
	case <-timer.C:
		b.Expire(tk, time.Now())
	}
}

func simSeeds(t *testing.T, def int) []uint64 {
	if s := os.Getenv("PLIMSOLL_SIM_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("PLIMSOLL_SIM_SEED=%q: %v", s, err)
		}
		return []uint64{n}
	}
	n := def
	if s := os.Getenv("PLIMSOLL_SIM_SEEDS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("PLIMSOLL_SIM_SEEDS=%q is not a positive number", s)
		}
		n = v
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

const (
	simKnee = 16
	simBase = 20 * time.Millisecond
)

// TestSimulation checks, across seeds, that no critical call is shed while a less critical one
// waits, that no call is shed for a reason that does not hold, and that the limit settles near
// the knee once the runs outnumber it.
func TestSimulation(t *testing.T) {
	seeds := simSeeds(t, 60)
	var critShed, shedTotal int
	for _, seed := range seeds {
		s := drawSchedule(seed)
		res := simulate(t, s, simKnee, simBase)
		for _, sh := range res.sheds {
			shedTotal++
			if sh.LowerWaiting > 0 {
				t.Fatalf("seed %d: a %s call was shed (%s) while %d less critical calls waited", seed, sh.Tier, sh.Kind, sh.LowerWaiting)
			}
			if sh.Tier == bulkhead.Critical {
				critShed++
			}
			if sh.Kind == bulkhead.QueueFull && sh.Queued < s.cfg.MaxQueue {
				t.Fatalf("seed %d: shed as queue full with %d of %d queued", seed, sh.Queued, s.cfg.MaxQueue)
			}
		}
		if s.runs < 2*simKnee {
			continue // the runs alone may not reach the knee: nothing to converge to
		}
		settled := limitsAfter(res.limits, s.duration/2)
		if p := percentile(settled, 50); p < simKnee*3/4 || p > simKnee*2 {
			t.Fatalf("seed %d (%d runs): median limit after settling is %d, not near the knee %d", seed, s.runs, p, simKnee)
		}
	}
	t.Logf("%d seeds, %d calls shed, %d of them critical (each with nothing less critical waiting)", len(seeds), shedTotal, critShed)
}

func limitsAfter(ls []sample, from time.Duration) []int {
	var out []int
	for _, l := range ls {
		if l.at >= from {
			out = append(out, l.limit)
		}
	}
	return out
}

func percentile(v []int, p int) int {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[min(len(v)-1, len(v)*p/100)]
}
