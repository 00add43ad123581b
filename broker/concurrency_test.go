package broker_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

// TestRunsAreIsolated runs two runs against one API at once. The API is overloaded for run A
// only; A's open breaker must never shed B's calls.
func TestRunsAreIsolated(t *testing.T) {
	api := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Run") == "A" {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	p := writeProfile(t, api.URL, healthProfile)
	a, b := newRun(t, p, nil), newRun(t, p, nil)
	as := func(run string) []byte {
		return withHeaders(t, map[string]any{"X-Run": run})
	}

	require.Equal(t, http.StatusServiceUnavailable, call(t, a, as("A")).Status) // A's breaker opens for 30 s
	const workers, calls = 4, 25
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := 0; i < calls; i++ {
				assert.Equal(t, "shed", call(t, a, as("A")).Headers[OutcomeHeaderName][0])
			}
		})
		wg.Go(func() {
			for i := 0; i < calls; i++ {
				g := call(t, b, as("B"))
				assert.Equal(t, http.StatusOK, g.Status)
				assert.NotContains(t, g.Headers, OutcomeHeaderName)
			}
		})
	}
	wg.Wait()

	assert.Equal(t, broker.Counters{HostCalls: workers * calls, Forwarded: workers * calls}, b.Counters())
	ca := a.Counters()
	assert.Equal(t, 1, ca.Forwarded)
	assert.Equal(t, workers*calls, ca.Shed)
	assert.Equal(t, 1, ca.BreakerOpens)
	fromA := 0
	for _, r := range api.requests() {
		if r.Header.Get("X-Run") == "A" {
			fromA++
		}
	}
	assert.Equal(t, 1, fromA, "run A's shed calls never reached the API")
	assert.Len(t, api.requests(), 1+workers*calls)
}

// TestHammer has 32 goroutines make 50 calls each on one run: forwarded, denied, invalid and,
// once the budget is spent, over budget. The counters, the trace and the API must agree.
func TestHammer(t *testing.T) {
	api := newUpstream(t, nil)
	const budget = 300
	run := newRun(t, writeProfile(t, api.URL, fmt.Sprintf("%sbudget:\n  calls: %d\n", petRoutes, budget)), nil)
	kinds := [][]byte{
		req(t, "GET", "/pets/1"),              // forwarded while the budget lasts, then over budget
		req(t, "DELETE", "/pets/1"),           // denied
		req(t, "GET", "/pets/%2e%2e"),         // invalid
		[]byte(`{"method":"GET","path":`),     // invalid
		req(t, "POST", "/pets", "body", "{}"), // forwarded or over budget
	}
	const goroutines, perG = 32, 50
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Go(func() {
			for i := 0; i < perG; i++ {
				call(t, run, kinds[(g+i)%len(kinds)])
			}
		})
	}
	wg.Wait()

	c := run.Counters()
	const total = goroutines * perG
	assert.Equal(t, total, c.HostCalls)
	assert.Equal(t, c.HostCalls, c.Forwarded+c.Shed+c.Denied+c.OverBudget+c.Invalid+c.Failed)
	assert.Equal(t, budget, c.Forwarded, "the budget is spent exactly, never overspent")
	assert.Equal(t, total*2/5, c.Forwarded+c.OverBudget)
	assert.Equal(t, total/5, c.Denied)
	assert.Equal(t, total*2/5, c.Invalid)
	assert.Zero(t, c.Shed+c.Failed)

	trace := run.Trace()
	require.Len(t, trace, total)
	byOutcome := map[broker.Outcome]int{}
	for i, e := range trace {
		require.Equal(t, i+1, e.Seq, "seq is 1..N with no gaps")
		byOutcome[e.Outcome]++
	}
	assert.Equal(t, map[broker.Outcome]int{broker.Forwarded: c.Forwarded, broker.Denied: c.Denied,
		broker.Invalid: c.Invalid, broker.OverBudget: c.OverBudget}, byOutcome)
	assert.Len(t, api.requests(), c.Forwarded, "the API saw exactly the forwarded calls")

	a := run.Finish(broker.StatusOK, nil)
	assert.Equal(t, c, a.Counters)
}
