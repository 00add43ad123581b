package host

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

// TestRunOptionsForcedOpenAndOnStart threads the daemon's hooks through a real run: OnStart
// hands over the run's live state before the guest starts, and the forced-open flag, set after
// the first call is recorded, sheds the second call without reaching the upstream.
func TestRunOptionsForcedOpenAndOnStart(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	var forced atomic.Bool
	var mu sync.Mutex
	var state func() broker.State
	var seen []broker.State
	opts := RunOptions{
		RunID: "run-forced",
		ForcedOpen: func() (string, bool) {
			return "INC-9 pets down", forced.Load()
		},
		OnStart: func(s func() broker.State) {
			mu.Lock()
			defer mu.Unlock()
			state = s
			seen = append(seen, s())
		},
		OnCall: func(broker.TraceEntry) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, state())
			forced.Store(true)
		},
	}
	tool := JSTool("forced.js", `
		const a = await api.get("/pets/1");
		const b = await api.get("/pets/2");
		return [a.status, b.status, b.headers["retry-after"]];
	`)
	res := shared(t).RunWith(context.Background(), tool, p, nil, opts)
	require.NoError(t, res.Err)
	require.JSONEq(t, `[200, 503, "30"]`, string(res.Output))
	require.Equal(t, int64(1), ps.requests.Load(), "the forced call reached nothing")
	require.Len(t, res.Trace, 2)
	require.Equal(t, broker.Shed, res.Trace[1].Outcome)
	require.Equal(t, broker.ForcedOpenReason+"INC-9 pets down", res.Trace[1].Reason)
	require.Equal(t, "INC-9 pets down", res.Audit.ForcedOpen)

	require.Len(t, seen, 3)
	require.Equal(t, broker.State{RunID: "run-forced", Profile: "pets", Tool: "forced.js", Start: seen[0].Start,
		ElapsedMs: seen[0].ElapsedMs, BudgetCalls: 100, Breaker: broker.BreakerClosed}, seen[0], "before the guest starts")
	require.Equal(t, broker.Counters{HostCalls: 1, Forwarded: 1}, seen[1].Counters)
	require.Equal(t, broker.Counters{HostCalls: 2, Forwarded: 1, Shed: 1}, seen[2].Counters)
	final := state()
	require.True(t, final.Finished)
	require.Equal(t, res.Audit.Counters, final.Counters)
}
