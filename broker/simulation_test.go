package broker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plimsoll/plimsoll/breaker"
	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/bulkhead"
)

// The deterministic simulation of one run's broker under concurrent calls (issue 12, seed 003's
// standard). Each seed draws a run: a budget, a concurrency, a health route or none, and an API
// that is overloaded (503 or 429, with or without Retry-After) in stretches of fake time. A
// guest makes its calls from several goroutines at once in a synctest bubble; the upstream is an
// in-memory transport that logs what it was sent and when. The log is then replayed through a
// model of the breaker rules (ARCHITECTURE.md) and the invariants are checked. A failure names
// its seed; PLIMSOLL_SIM_SEED=N replays that schedule (arrivals, latencies and replies are
// functions of the seed and of fake time).

// simRun is what one seed draws.
type simRun struct {
	seed     uint64
	budget   int
	inflight int
	health   bool
	calls    []simCall
	regimes  []regime
	limit    string // a concurrency block in front (issue 26), or "": the breaker rules still hold
}

type simCall struct {
	think   time.Duration // before it is made, after the previous one was started
	latency time.Duration
}

// regime is a stretch of fake time in which the API answers overloaded.
type regime struct {
	from, to   time.Duration
	status     int
	retryAfter string
	mixed      bool // some forwarded calls answer 429 and others 503, so 503 windows meet 429s
}

func drawRun(seed uint64) simRun {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	us := func(maxMs int) time.Duration { return time.Duration(rng.IntN(maxMs*1000)) * time.Microsecond }
	r := simRun{seed: seed, budget: 5 + rng.IntN(60), inflight: 1 + rng.IntN(8), health: rng.IntN(3) > 0}
	for range 20 + rng.IntN(80) {
		r.calls = append(r.calls, simCall{think: us(250), latency: us(400)})
	}
	at := time.Duration(0)
	for range 1 + rng.IntN(4) {
		at += us(3000)
		rg := regime{from: at, to: at + us(4000), status: []int{503, 429}[rng.IntN(2)]}
		rg.retryAfter = []string{"", "0", "1", "2", "3", "junk"}[rng.IntN(6)]
		rg.mixed = rng.IntN(2) == 0
		r.regimes = append(r.regimes, rg)
		at = rg.to
	}
	if rng.IntN(2) == 0 {
		r.limit = fmt.Sprintf("concurrency:\n  limit: %d\n  max_queue: %d\n  queue_timeout: %dms\n",
			1+rng.IntN(r.inflight), rng.IntN(4), 50+rng.IntN(500))
	}
	return r
}

func (r simRun) overloaded(at time.Duration) (regime, bool) {
	for _, rg := range r.regimes {
		if at >= rg.from && at < rg.to {
			return rg, true
		}
	}
	return regime{}, false
}

// event is what the upstream saw: a request arriving or a reply leaving, at a fake instant.
type event struct {
	at         time.Duration
	probe      bool
	reply      bool
	status     int // replies; 0 when the broker gave up
	retryAfter string
	call       int // the call's index, for forwarded calls
}

// simAPI is the in-memory upstream.
type simAPI struct {
	run         simRun
	start       time.Time
	mu          sync.Mutex
	log         []event
	probesNow   int
	mostProbes  int
	forwardsNow int
	mostForward int
}

func (a *simAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	at := time.Since(a.start)
	path := req.URL.RequestURI() // the broker sends the matched bytes as the URL's opaque part
	probe := path == "/v1/status"
	call := -1
	latency := 150 * time.Millisecond
	if !probe {
		call, _ = strconv.Atoi(path[len("/v1/items/"):])
		latency = a.run.calls[call].latency
	}
	a.mu.Lock()
	a.log = append(a.log, event{at: at, probe: probe, call: call})
	if probe {
		a.probesNow++
		a.mostProbes = max(a.mostProbes, a.probesNow)
	} else {
		a.forwardsNow++
		a.mostForward = max(a.mostForward, a.forwardsNow)
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if probe {
			a.probesNow--
		} else {
			a.forwardsNow--
		}
		a.mu.Unlock()
	}()

	t := time.NewTimer(latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-req.Context().Done():
		a.record(event{at: time.Since(a.start), probe: probe, reply: true, call: call})
		return nil, req.Context().Err()
	}
	status, h := 200, http.Header{}
	if rg, ok := a.run.overloaded(at); ok {
		status = rg.status
		if rg.mixed && !probe && call%3 == 0 {
			status = 429 + 503 - rg.status // the other overload status
		}
		if rg.retryAfter != "" {
			h.Set("Retry-After", rg.retryAfter)
		}
	}
	a.record(event{at: time.Since(a.start), probe: probe, reply: true, status: status, retryAfter: h.Get("Retry-After"), call: call})
	return inMemReply(status, "{}", flatten(h)...), nil
}

func (a *simAPI) record(e event) {
	a.mu.Lock()
	a.log = append(a.log, e)
	a.mu.Unlock()
}

func flatten(h http.Header) []string {
	var kv []string
	for k, vs := range h {
		for _, v := range vs {
			kv = append(kv, k, v)
		}
	}
	return kv
}

// simulate runs one seed and returns what it saw.
func simulate(t *testing.T, run simRun) (api *simAPI, trace []broker.TraceEntry, audit broker.Audit) {
	health := ""
	if run.health {
		health = "health_check: GET /status\n"
	}
	p := writeProfile(t, "http://sim.invalid/v1", fmt.Sprintf(
		"routes:\n  - GET /items/*\n%sbudget:\n  calls: %d\nlimits:\n  call_timeout: 10s\n  max_inflight: %d\n%s",
		health, run.budget, run.inflight, run.limit))
	synctest.Test(t, func(t *testing.T) {
		api = &simAPI{run: run, start: time.Now()}
		b := newLimitedRun(t, p, api, broker.NewLimits(), "run-test", bulkhead.Normal)
		sem := make(chan struct{}, run.inflight)
		var wg sync.WaitGroup
		for i, c := range run.calls {
			time.Sleep(c.think)
			sem <- struct{}{}
			// As the host does for host_submit: decisions now, in submission order; I/O later.
			started := b.StartEnvelope(fmt.Appendf(nil, `{"method":"GET","path":"/items/%d"}`, i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				started.Complete(context.Background())
			}()
		}
		wg.Wait()
		trace = b.Trace()
		audit = b.Finish(broker.StatusOK, nil)
	})
	return api, trace, audit
}

// check replays the upstream's log through a model of the breaker rules and returns the first
// invariant broken, or "".
func check(run simRun, api *simAPI, trace []broker.TraceEntry, audit broker.Audit) string {
	log := slices.Clone(api.log)
	slices.SortStableFunc(log, func(a, b event) int { return int(a.at - b.at) })
	replyAt := map[time.Duration]bool{} // instants when a reply changed what the broker knows
	for _, e := range log {
		if e.reply {
			replyAt[e.at] = true
		}
	}
	var (
		until, openedAt, lastProbe time.Duration = 0, 0, -time.Hour
		is429, open                bool
		window                     int
		probeWindow                = map[int]int{} // probe request index → window it probed
		forwards                   int
	)
	isOpen := func(at time.Duration) bool { return open && at < until }
	for i, e := range log {
		ambiguous := replyAt[e.at] // the broker may have seen a reply at this very instant first
		switch {
		case !e.reply && !e.probe:
			forwards++
			if isOpen(e.at) && e.at > openedAt && !ambiguous {
				return fmt.Sprintf("call %d forwarded at %v inside the window [%v, %v) that no 2xx probe closed", e.call, e.at, openedAt, until)
			}
		case !e.reply && e.probe:
			if !run.health {
				return fmt.Sprintf("a probe at %v, but the grant has no health_check", e.at)
			}
			if !ambiguous && (!isOpen(e.at) || is429) {
				return fmt.Sprintf("a probe at %v outside an open 503 window (open %v, 429 %v)", e.at, isOpen(e.at), is429)
			}
			if e.at-lastProbe < breaker.ProbeInterval {
				return fmt.Sprintf("probes at %v and %v, under %v apart", lastProbe, e.at, breaker.ProbeInterval)
			}
			lastProbe = e.at
			probeWindow[i] = window
		case e.reply && !e.probe && (e.status == 503 || e.status == 429):
			d := breaker.Cooldown(e.retryAfter, api.start.Add(e.at))
			switch {
			case isOpen(e.at):
				until = max(until, e.at+d)
				is429 = is429 || e.status == 429
			case d > 0:
				open, openedAt, until, is429 = true, e.at, e.at+d, e.status == 429
				window++
			}
		case e.reply && e.probe:
			// A window that has seen a 429 keeps that property even if a 503 opened it: a 2xx
			// probe answer does not close it (seed rule).
			if isOpen(e.at) && !is429 && e.status >= 200 && e.status <= 299 && lastProbeWindow(probeWindow, log, i) == window {
				open = false
			} else if isOpen(e.at) && e.status == 429 {
				is429 = true
			}
		}
	}
	if api.mostProbes > 1 {
		return fmt.Sprintf("%d probes in flight at once", api.mostProbes)
	}
	if api.mostForward > run.inflight {
		return fmt.Sprintf("%d calls at the upstream at once, over max_inflight %d", api.mostForward, run.inflight)
	}
	if forwards > run.budget {
		return fmt.Sprintf("%d calls forwarded, over the budget of %d", forwards, run.budget)
	}
	if len(trace) != len(run.calls) {
		return fmt.Sprintf("%d trace entries for %d calls", len(trace), len(run.calls))
	}
	var tally broker.Counters
	for i, e := range trace {
		if e.Seq != i+1 {
			return fmt.Sprintf("trace entry %d has seq %d", i, e.Seq)
		}
		tally.HostCalls++
		switch e.Outcome {
		case broker.Forwarded:
			tally.Forwarded++
		case broker.Shed:
			tally.Shed++
		case broker.OverBudget:
			tally.OverBudget++
		case broker.Failed:
			tally.Failed++
		default:
			return fmt.Sprintf("trace entry %d: unexpected outcome %s", i, e.Outcome)
		}
	}
	for _, e := range log {
		switch {
		case e.probe && !e.reply:
			tally.Probes++
		case e.probe && e.reply && e.status >= 200 && e.status <= 299:
			tally.ProbesOK++
		}
	}
	got := audit.Counters
	got.BreakerOpens = 0 // the model's count of windows is checked above, window by window
	if got != tally {
		return fmt.Sprintf("audit counters %+v, trace and upstream %+v", got, tally)
	}
	return ""
}

// lastProbeWindow is the window the probe answered at log[i] was sent in: the last probe request
// before it.
func lastProbeWindow(probeWindow map[int]int, log []event, i int) int {
	for j := i - 1; j >= 0; j-- {
		if w, ok := probeWindow[j]; ok && log[j].probe && !log[j].reply {
			return w
		}
	}
	return -1
}

func simulateSeed(t *testing.T, seed uint64) {
	run := drawRun(seed)
	api, trace, audit := simulate(t, run)
	if v := check(run, api, trace, audit); v != "" {
		t.Fatalf("seed %d: %s (replay: PLIMSOLL_SIM_SEED=%d go test -run TestSimulation ./broker/)", seed, v, seed)
	}
}

func TestSimulation(t *testing.T) {
	if s := os.Getenv("PLIMSOLL_SIM_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("PLIMSOLL_SIM_SEED: %v", err)
		}
		simulateSeed(t, seed)
		return
	}
	n := 300
	if testing.Short() {
		n = 50
	}
	for seed := range uint64(n) {
		simulateSeed(t, seed)
	}
}

// FuzzSimulation gives the simulation more seeds in CI's fuzz step.
func FuzzSimulation(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { simulateSeed(t, seed) })
}

// TestSimulationProbeRace is the schedule where a 429 reaches a 503 window while its probe is
// out: call 0 is forwarded before the window opens and answers 429 late; call 1 opens the 503
// window; call 2 is picked to probe; the probe answers 200 after the 429 arrived. The window is
// now a 429 window, so calls 2 and 3 are shed, not forwarded.
func TestSimulationProbeRace(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	run := simRun{budget: 50, inflight: 4, health: true,
		regimes: []regime{{from: 0, to: ms(50), status: 503, retryAfter: "3", mixed: true}},
		calls: []simCall{
			{think: 0, latency: ms(1100)},     // at 0: 429 (mixed), answered at 1.1 s
			{think: ms(1), latency: ms(5)},    // at 1 ms: 503, opens the window at 6 ms
			{think: ms(1050), latency: ms(5)}, // at 1.051 s: picked to probe; the probe answers 200 at 1.201 s
			{think: ms(200), latency: ms(5)},  // at 1.251 s: inside the 429 window
		}}
	api, trace, audit := simulate(t, run)
	if v := check(run, api, trace, audit); v != "" {
		t.Fatal(v)
	}
	for _, i := range []int{2, 3} {
		if trace[i].Outcome != broker.Shed {
			t.Errorf("call %d: %s (%s), want shed: the window saw a 429", i, trace[i].Outcome, trace[i].Reason)
		}
	}
}
