package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
)

// Isolation: runs share nothing, and a run that hogs the CPU does not starve another.
var isolationCases = []struct {
	name string
	run  func(t *testing.T)
}{
	{"GOMAXPROCS tight loops do not starve a well-behaved run", func(t *testing.T) {
		requireNotStarved(t, runtime.GOMAXPROCS(0))
	}},
	{"all slots but one spinning do not starve a well-behaved run", func(t *testing.T) {
		requireNotStarved(t, 2*runtime.GOMAXPROCS(0)-1)
	}},
	{"a queued run ends at its caller's deadline, with its audit line", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{MaxConcurrent: 1})
		base := runtime.NumGoroutine()
		up := newRecorder(t)
		p := secProfile(t, up.URL(), lim{"run_timeout": "1m"})
		hog, stop := context.WithCancel(context.Background())
		done := make(chan host.Result, 1)
		go func() { done <- runJS(hog, rt, p, `await api.get("/pets/1"); for (;;) {}`) }()
		<-up.received // the loop holds the only slot

		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		res := runJS(ctx, rt, p, `return "never started";`)

		require.Equal(t, broker.StatusTimeout, res.Audit.Status)
		require.EqualError(t, res.Err, "run timed out: the caller's deadline passed")
		require.Equal(t, none, res.Audit.Counters)
		require.Empty(t, res.Output)
		requireAuditAndTrace(t, res)
		stop()
		hogRes := <-done
		require.ErrorIs(t, hogRes.Err, host.ErrCancel)
		requireAuditAndTrace(t, hogRes)
		up.Close()
		requireGoroutinesBack(t, base)
	}},
	{"globals are invisible to later and concurrent runs", func(t *testing.T) {
		for _, opts := range []host.Options{{}, {PoolSize: 2}} {
			rt := newSecRuntime(t, opts)
			up := newRecorder(t)
			p := secProfile(t, up.URL(), nil)
			const spoil = `
				globalThis.leak = "run A";
				Object.prototype.polluted = "run A";
				Array.prototype.push = function () { return "hijacked"; };
				api.get = async () => ({status: 299, body: "forged by run A"});
				console.log = () => {};
				Math.random = () => 4;
				return "spoiled";`
			const inspect = `
				const r = await api.get("/pets/1");
				const a = []; a.push(1);
				return [typeof globalThis.leak, ({}).polluted === undefined, a.length, r.status,
					String(Math.random() < 1), typeof console.log].join(" ");`
			for range 2 {
				require.Equal(t, `"spoiled"`, string(runJS(context.Background(), rt, p, spoil).Output))
				res := runJS(context.Background(), rt, p, inspect)
				require.NoError(t, res.Err)
				require.Equal(t, `"undefined true 1 200 true function"`, string(res.Output))
			}
			// Concurrently: each pair races, and no run sees another's changes.
			results := make(chan host.Result, 8)
			for i := range 8 {
				src := inspect
				if i%2 == 0 {
					src = spoil
				}
				go func() { results <- runJS(context.Background(), rt, p, src) }()
			}
			for range 8 {
				res := <-results
				require.NoError(t, res.Err)
				require.Contains(t, []string{`"spoiled"`, `"undefined true 1 200 true function"`}, string(res.Output))
				requireAuditAndTrace(t, res)
			}
			up.Close()
		}
	}},
	{"memory is invisible to the next run", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{})
		up := newRecorder(t)
		defer up.Close()
		p := secProfile(t, up.URL(), nil)
		const reversed = "!nur A nur morf tekram terces-nuR-na" // the marker, backwards
		res := rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "mark", "msg": reversed, "n": 1000, "scan": true}))
		require.NoError(t, res.Err)
		var found int
		_, err := fmt.Sscan(string(res.Output), &found)
		require.NoError(t, err)
		require.GreaterOrEqual(t, found, 1000, "the scanner finds the marker in the run that wrote it")

		res = rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "scan", "msg": reversed}))
		require.NoError(t, res.Err)
		require.Equal(t, "0\n", string(res.Output), "the next run's memory holds none of it")
	}},
	{"a pending response is not carried over", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{})
		up := newRecorder(t)
		defer up.Close()
		p := secProfile(t, up.URL(), nil)
		res := rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "raw", "args": []int64{-1, 27, -1, 0}}))
		require.NoError(t, res.Err)
		require.NotEqual(t, "-1\n", string(res.Output))
		require.Equal(t, denied, res.Audit.Counters, "the call left its answer pending")

		res = rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "raw", "fn": "host_response", "args": []int64{-1, 256}}))
		require.NoError(t, res.Err)
		require.Equal(t, "-2\n", string(res.Output), "ERR_NO_PENDING: the earlier run's answer is gone")
	}},
	{"breakers are per run", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{})
		up := newRecorder(t)
		defer up.Close()
		p := secProfile(t, up.URL(), nil)
		res := runJS(context.Background(), rt, p, retryAfterTwice("huge"))
		require.Equal(t, `"503 forwarded [99999999999] then 503 shed [30]"`, string(res.Output), "run A's breaker is open for 30 s")
		res = runJS(context.Background(), rt, p, get("/pets/1"))
		require.Equal(t, `"200 forwarded ok GET /v1/pets/1"`, string(res.Output), "run B's is closed")
		require.Equal(t, fwd1, res.Audit.Counters)
	}},
	{"budgets are per run", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{})
		up := newRecorder(t)
		defer up.Close()
		p := secProfile(t, up.URL(), lim{"budget": "2"})
		three := `const s = []; for (let i = 0; i < 3; i++) s.push((await api.get("/pets/" + i)).status); return s.join(" ");`
		for range 2 {
			res := runJS(context.Background(), rt, p, three)
			require.Equal(t, `"200 200 429"`, string(res.Output))
			require.Equal(t, broker.Counters{HostCalls: 3, Forwarded: 2, OverBudget: 1}, res.Audit.Counters)
		}
		require.Len(t, up.requests(), 4)
	}},
	{"concurrent runs keep their own trace, counters and run id", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{})
		up := newRecorder(t)
		defer up.Close()
		p := secProfile(t, up.URL(), nil)
		const n = 6
		results := make(chan host.Result, n)
		for i := range n {
			src := fmt.Sprintf(`for (let k = 0; k <= %d; k++) await api.get("/pets/run%d"); return %d;`, i, i, i)
			go func() { results <- runJS(context.Background(), rt, p, src) }()
		}
		ids := map[string]bool{}
		for range n {
			res := <-results
			require.NoError(t, res.Err)
			var i int
			require.NoError(t, json.Unmarshal(res.Output, &i))
			require.Len(t, res.Trace, i+1)
			for _, e := range res.Trace {
				require.Equal(t, fmt.Sprintf("/pets/run%d", i), e.Path)
			}
			require.Equal(t, broker.Counters{HostCalls: i + 1, Forwarded: i + 1}, res.Audit.Counters)
			requireAuditAndTrace(t, res)
			ids[res.Audit.RunID] = true
		}
		require.Len(t, ids, n)
	}},
}

func TestSecurityIsolation(t *testing.T) {
	for _, c := range isolationCases {
		t.Run(c.name, c.run)
	}
}

// runJS runs a JavaScript tool with the suite's prelude.
func runJS(ctx context.Context, rt *host.Runtime, p *profiles.Profile, src string) host.Result {
	return rt.Run(ctx, host.JSTool("case.js", jsPrelude+src), p, nil)
}

// requireNotStarved starts n runs that spin forever, then checks that a well-behaved run still
// finishes within its own deadline, with status ok. host.Options.MaxConcurrent (2×GOMAXPROCS by
// default) bounds the runs executing at once; a spinning guest is stopped at its deadline by
// wazero's close-on-context-done checks, and between them the Go scheduler preempts it like any
// goroutine.
func requireNotStarved(t *testing.T, n int) {
	rt := newSecRuntime(t, host.Options{})
	base := runtime.NumGoroutine()
	up := newRecorder(t)
	hogs := secProfile(t, up.URL(), lim{"run_timeout": "10m"})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan host.Result, n)
	for range n {
		go func() { done <- runJS(ctx, rt, hogs, `await api.get("/pets/hog"); for (;;) {}`) }()
	}
	waitRequests(t, up, n) // every spinning run has started

	// The spinning runs have ten minutes, the good run two: it fails only if it is starved, not
	// when the machine is merely busy.
	good := secProfile(t, up.URL(), lim{"run_timeout": "2m", "call_timeout": "2m"})
	res := runJS(context.Background(), rt, good, `
		let sum = 0;
		for (let i = 0; i < 20000; i++) sum += i;
		const r = await api.get("/pets/good");
		return r.status + " " + sum;`)

	require.NoError(t, res.Err, "the well-behaved run finishes within its deadline")
	require.Equal(t, broker.StatusOK, res.Audit.Status)
	require.Equal(t, `"200 199990000"`, string(res.Output))
	require.Equal(t, fwd1, res.Audit.Counters)
	stop()
	for range n {
		hog := <-done
		require.ErrorIs(t, hog.Err, host.ErrCancel)
		require.Equal(t, fwd1, hog.Audit.Counters)
		requireAuditAndTrace(t, hog)
	}
	up.Close()
	requireGoroutinesBack(t, base)
}
