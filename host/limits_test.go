package host

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/bulkhead"
)

// TestConcurrencyLimitThroughARealRun: a JS tool fires six calls at once at a loopback API whose
// profile allows 2 in flight and 2 waiting. Two reach the API, two wait, two are shed at once as
// the queue is full; the API is released only once both sheds are recorded and two calls are
// at the API, and the waiting calls then go through. The run's criticality reaches the limit: the sheds count as critical.
func TestConcurrencyLimitThroughARealRun(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	now, most, seen := 0, 0, 0
	var first sync.WaitGroup // the two calls the limit lets through at once
	first.Add(2)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now++
		most = max(most, now)
		if seen++; seen <= 2 {
			first.Done()
		}
		mu.Unlock()
		<-gate
		mu.Lock()
		now--
		mu.Unlock()
		fmt.Fprint(w, `{}`)
	}))
	defer api.Close()
	p := profile(t, api.URL, "concurrency:\n  limit: 2\n  max_queue: 2\n  queue_timeout: 30s\n")
	rt := newRuntime(t, Options{})

	var sheds sync.WaitGroup
	sheds.Add(2)
	opts := RunOptions{Criticality: bulkhead.Critical, OnCall: func(e broker.TraceEntry) {
		if e.Outcome == broker.Shed {
			sheds.Done()
		}
	}}
	go func() { sheds.Wait(); first.Wait(); close(gate) }()
	tool := JSTool("six.js", `
		const rs = await Promise.all([1, 2, 3, 4, 5, 6].map(i => api.get("/pets/" + i)));
		return rs.map(r => r.status).sort();
	`)
	res := rt.RunWith(context.Background(), tool, p, nil, opts)
	require.NoError(t, res.Err)
	require.JSONEq(t, `[200, 200, 200, 200, 503, 503]`, string(res.Output))
	require.Equal(t, 2, most, "the API never saw more than the limit")
	require.Equal(t, 4, res.Audit.Forwarded)
	require.Equal(t, 2, res.Audit.Shed)
	for _, e := range res.Trace {
		if e.Outcome == broker.Shed {
			require.True(t, strings.HasPrefix(e.Reason, "API limit: 2 in flight at limit 2 and the queue is full"), e.Reason)
		}
	}
	st := rt.Limits().State()
	require.Len(t, st, 1)
	require.Equal(t, "pets", st[0].Profile)
	require.Equal(t, uint64(2), st[0].Shed["critical"])
	require.Equal(t, 0, st[0].InFlight)
}
