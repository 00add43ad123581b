package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

// JavaScript's api calls overlap (guest ABI v2): Promise.all of ten calls against an upstream
// that answers only once four are held at once, with limits.max_inflight 4. The other six wait in
// the engine and go as room frees; the trace numbers calls in submission order; the counters
// equal the trace; each promise resolves with its own call's response.
func TestJSPromiseAllOverlapsUpToMaxInflight(t *testing.T) {
	up := newOverlapUpstream(t, 4)
	p := concurrentProfile(t, up.URL, "limits:\n  max_inflight: 4\n")
	tool := JSTool("fanout.js", `
const rs = await Promise.all(Array.from({length: 10}, (_, i) => api.get("/pets/" + i)));
return rs.map((r) => r.status + " " + r.json().path);`)
	res := shared(t).Run(context.Background(), tool, p, nil)
	require.NoError(t, res.Err, string(res.Log))

	var got []string
	require.NoError(t, json.Unmarshal(res.Output, &got))
	require.Len(t, got, 10)
	for i, l := range got {
		assert.Equal(t, fmt.Sprintf("200 /v1/pets/%d", i), l, "each promise has its own call's response")
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
	assert.Equal(t, broker.Counters{HostCalls: 10, Forwarded: 10}, res.Audit.Counters)
}

// Promise.race overlaps calls too: its two calls answer only when both are at the upstream. And
// Promise.allSettled sees a denied call beside forwarded ones. Calls go through every path of
// the preamble (api.get's shortcut, api.call, and the long way of a tool that replaced
// JSON.parse).
func TestJSRaceAndAllSettledOverlap(t *testing.T) {
	up := newOverlapUpstream(t, 2)
	p := concurrentProfile(t, up.URL, "")
	tool := JSTool("race.js", `
const raced = [api.get("/pets/1"), api.call("GET", "/pets/2", {query: {a: 1}})];
const first = await Promise.race(raced);
const parse = JSON.parse;
JSON.parse = (s) => parse(s); // the long way: the preamble parses the envelope itself
const all = await Promise.allSettled([api.get("/pets/3"), api.get("/admin"), api.get("/pets/4", {query: {b: 2}})]);
JSON.parse = parse;
await Promise.all(raced); // the race's other call, so that it is not canceled at the end
return {first: first.status, all: all.map((s) => s.status + " " + s.value.status + " " + s.value.outcome)};`)
	res := shared(t).Run(context.Background(), tool, p, nil)
	require.NoError(t, res.Err, string(res.Log))
	assert.JSONEq(t, `{"first":200,"all":["fulfilled 200 forwarded","fulfilled 403 denied","fulfilled 200 forwarded"]}`, string(res.Output))
	up.mu.Lock()
	most := up.most
	up.mu.Unlock()
	assert.Equal(t, 2, most, "the race's two calls were at the upstream at once")
	assert.Equal(t, broker.Counters{HostCalls: 5, Forwarded: 4, Denied: 1}, res.Audit.Counters)
	require.Len(t, res.Trace, 5)
	for i, path := range []string{"/pets/1", "/pets/2", "/pets/3", "/admin", "/pets/4"} {
		assert.Equal(t, i+1, res.Trace[i].Seq)
		assert.Equal(t, path, res.Trace[i].Path)
	}
}

// sleep interleaves with calls in flight: a call completes (and its then runs) while a sleep is
// pending, and a sleep ends while a call is still in flight.
func TestJSSleepInterleavesWithCalls(t *testing.T) {
	// /pets/1 answers after 50 ms; /pets/2 never answers while the run lasts, so the race below
	// is the sleep's however busy the machine is.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := time.After(50 * time.Millisecond)
		if strings.HasSuffix(r.URL.Path, "/pets/2") {
			wait = nil
		}
		select {
		case <-wait:
		case <-r.Context().Done():
		}
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	t.Cleanup(up.Close)
	p := concurrentProfile(t, up.URL, "")
	tool := JSTool("sleepy.js", `
const t0 = Date.now();
let done = -1;
const call = api.get("/pets/1").then((r) => { done = Date.now() - t0; return r.status; });
await sleep(1000);
const slept = Date.now() - t0;
const status = await call;
const winner = await Promise.race([sleep(10).then(() => "sleep"), api.get("/pets/2").then(() => "call")]);
return {done, slept, status, winner};`)
	res := shared(t).Run(context.Background(), tool, p, nil)
	require.NoError(t, res.Err, string(res.Log))
	var got struct {
		Done, Slept, Status int
		Winner              string
	}
	require.NoError(t, json.Unmarshal(res.Output, &got), string(res.Output))
	assert.GreaterOrEqual(t, got.Done, 40, "the call took the upstream's time")
	assert.Less(t, got.Done, got.Slept, "the call completed (and its then ran) while the sleep was pending")
	assert.GreaterOrEqual(t, got.Slept, 1000)
	assert.Equal(t, 200, got.Status)
	assert.Equal(t, "sleep", got.Winner, "the sleep ended while the call was in flight")
	// The race's call was still in flight when the tool returned: canceled and recorded.
	require.Len(t, res.Trace, 2)
	assert.Equal(t, broker.Forwarded, res.Trace[0].Outcome)
	assert.Equal(t, broker.Failed, res.Trace[1].Outcome)
	assert.Equal(t, broker.Counters{HostCalls: 2, Forwarded: 1, Failed: 1}, res.Audit.Counters)
}

// The run deadline ends a run waiting for calls in flight, as it ends one blocked in a call.
func TestJSDeadlineWhileCallsInFlight(t *testing.T) {
	up := newOverlapUpstream(t, 3) // two calls never complete before the safety limit
	p := concurrentProfile(t, up.URL, "limits:\n  run_timeout: 300ms\n")
	tool := JSTool("hang.js", `await Promise.all([api.get("/pets/1"), api.get("/pets/2")]); return "done";`)
	start := time.Now()
	res := shared(t).Run(context.Background(), tool, p, nil)
	require.Error(t, res.Err)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Equal(t, broker.StatusTimeout, res.Audit.Status)
	requireMatch(t, "run timed out: limits.run_timeout (300ms) passed", res.Err.Error())
	assert.Equal(t, broker.Counters{HostCalls: 2, Failed: 2}, res.Audit.Counters)
}

// An api call's promise stays pending until its call completes: a tool that returns without
// awaiting it returns at once, and the call is canceled and recorded.
func TestJSUnawaitedCallIsCanceledAtTheEnd(t *testing.T) {
	up := newOverlapUpstream(t, 2)
	p := concurrentProfile(t, up.URL, "")
	tool := JSTool("fire.js", `api.get("/pets/1"); return "returned";`)
	res := shared(t).Run(context.Background(), tool, p, nil)
	require.NoError(t, res.Err, string(res.Log))
	assert.Equal(t, `"returned"`, string(res.Output))
	require.Len(t, res.Trace, 1)
	assert.Equal(t, broker.Failed, res.Trace[0].Outcome)
	assert.Equal(t, broker.Counters{HostCalls: 1, Failed: 1}, res.Audit.Counters)
}
