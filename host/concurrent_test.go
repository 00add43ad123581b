package host

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// overlapUpstream answers GET /v1/pets/N after as many requests are in flight at once as it was
// told to expect (or after a safety limit, so a sequential client fails the test rather than
// hanging it), and remembers the most it saw at once.
type overlapUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	now     int
	most    int
	arrived chan struct{}
}

func newOverlapUpstream(t testing.TB, expect int) *overlapUpstream {
	u := &overlapUpstream{arrived: make(chan struct{})}
	var once sync.Once
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.now++
		u.most = max(u.most, u.now)
		if u.now >= expect {
			once.Do(func() { close(u.arrived) })
		}
		u.mu.Unlock()
		select {
		case <-u.arrived:
		case <-r.Context().Done(): // the broker gave the call up
		case <-time.After(5 * time.Second): // a bound on a broken client, not a figure
		}
		u.mu.Lock()
		u.now--
		u.mu.Unlock()
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	t.Cleanup(u.Close)
	return u
}

func concurrentProfile(t testing.TB, base, limits string) *profiles.Profile {
	t.Helper()
	yaml := fmt.Sprintf("base_url: %s/v1\nroutes:\n  - GET /pets/*\n%s", base, limits)
	path := filepath.Join(t.TempDir(), "pets.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
	p, err := profiles.LoadFile(path)
	require.NoError(t, err)
	return p
}

// Calls made with the Go preamble's Go overlap at the upstream, up to limits.max_inflight; the
// trace numbers them in submission order and the counters equal it.
func TestConcurrentCallsOverlapUpToMaxInflight(t *testing.T) {
	up := newOverlapUpstream(t, 4)
	p := concurrentProfile(t, up.URL, "limits:\n  max_inflight: 4\n")
	res := shared(t).Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "fanout", "n": 10, "path": "/pets/%d"}))
	require.NoError(t, res.Err, string(res.Log))

	lines := strings.Split(strings.TrimSpace(string(res.Output)), "\n")
	require.Len(t, lines, 10)
	for i, l := range lines {
		assert.Equal(t, fmt.Sprintf("%d 200", i), l)
	}
	up.mu.Lock()
	most := up.most
	up.mu.Unlock()
	assert.Equal(t, 4, most, "four calls were at the upstream at once, never more")
	require.Len(t, res.Trace, 10)
	for i, e := range res.Trace {
		assert.Equal(t, i+1, e.Seq)
		assert.Equal(t, fmt.Sprintf("/pets/%d", i), e.Path, "seq is submission order")
		assert.Equal(t, broker.Forwarded, e.Outcome)
	}
	assert.Equal(t, 10, res.Audit.Forwarded)
	assert.Equal(t, 10, res.Audit.HostCalls)
}

// The budget is exact under concurrency: never one forwarded call over it.
func TestConcurrentCallsKeepTheBudgetExact(t *testing.T) {
	up := newOverlapUpstream(t, 1)
	p := concurrentProfile(t, up.URL, "budget:\n  calls: 3\nlimits:\n  max_inflight: 8\n")
	res := shared(t).Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "fanout", "n": 8, "path": "/pets/%d"}))
	require.NoError(t, res.Err, string(res.Log))
	assert.Equal(t, 3, res.Audit.Forwarded)
	assert.Equal(t, 5, res.Audit.OverBudget)
	// Decisions follow submission order: the first three submitted are the three forwarded.
	assert.Equal(t, "0 200\n1 200\n2 200\n3 429 over_budget\n4 429 over_budget\n5 429 over_budget\n"+
		"6 429 over_budget\n7 429 over_budget\n", string(res.Output))
}

// The v2 imports check every pointer and id: out-of-bounds ranges and unknown ids are refused
// with their codes, and nothing is sent.
func TestConcurrentImportsRefuseBadArguments(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	cases := []struct {
		name string
		fn   string
		args []int64
		want string
	}{
		{"submit out of bounds", "host_submit", []int64{0xfffffff0, 0x100}, "-1"},
		{"submit wrapping 2^32", "host_submit", []int64{0xffffffff, 2}, "-1"},
		{"wait out of bounds", "host_wait", []int64{0xfffffff0, 64, 0}, "-1"},
		{"wait with a buffer under one id", "host_wait", []int64{-1, 3, 0}, "-3"},
		{"wait with nothing in flight", "host_wait", []int64{-1, 64, 0xffffffff}, "0"},
		{"result of an unknown id", "host_result", []int64{7, -1, 256}, "-6"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := ps.requests.Load()
			res := shared(t).Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "raw", "fn": tc.fn, "args": tc.args}))
			require.NoError(t, res.Err, string(res.Log))
			assert.Equal(t, tc.want+"\n", string(res.Output))
			assert.Equal(t, before, ps.requests.Load(), "nothing reached the upstream")
		})
	}
}

// A call still in flight when the guest returns is canceled and recorded before the audit line,
// so the counters equal the trace.
func TestCallsInFlightAtTheEndAreRecorded(t *testing.T) {
	up := newOverlapUpstream(t, 2) // one call alone never completes before the safety limit
	p := concurrentProfile(t, up.URL, "")
	res := shared(t).Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "raw", "fn": "host_submit",
		"envelope": `{"method":"GET","path":"/pets/1"}`, "args": []int64{-1, 33}}))
	require.NoError(t, res.Err, string(res.Log))
	assert.Equal(t, "1\n", string(res.Output), "the call's id")
	require.Len(t, res.Trace, 1)
	assert.Equal(t, broker.Failed, res.Trace[0].Outcome)
	assert.Contains(t, res.Trace[0].Reason, "the run is ending")
	assert.Equal(t, 1, res.Audit.Failed)
	assert.Equal(t, 1, res.Audit.HostCalls)
}

// 100 runs, each with 8 calls in flight, through one Runtime (run under -race in CI): no trace
// entry lost, every run's counters exact, seq 1..8 in submission order.
func TestConcurrentRunsHammer(t *testing.T) {
	up := newOverlapUpstream(t, 1)
	p := concurrentProfile(t, up.URL, "limits:\n  max_inflight: 8\n")
	rt := shared(t)
	var wg sync.WaitGroup
	results := make([]Result, 100)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "fanout", "n": 8, "path": "/pets/%d"}))
		}()
	}
	wg.Wait()
	for i, res := range results {
		require.NoError(t, res.Err, "run %d: %s", i, res.Log)
		require.Len(t, res.Trace, 8, "run %d", i)
		for j, e := range res.Trace {
			require.Equal(t, j+1, e.Seq)
			require.Equal(t, fmt.Sprintf("/pets/%d", j), e.Path)
		}
		require.Equal(t, broker.Counters{HostCalls: 8, Forwarded: 8}, res.Audit.Counters, "run %d", i)
	}
}
