package broker_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedEvents runs the seed's chart (one call every 100 ms for 8 s) and returns the breaker events.
func seedEvents(t *testing.T, status int, retryAfter string, health bool) ([]broker.BreakerEvent, []broker.TraceEntry) {
	t.Helper()
	profile := chartProfile(t, health)
	var events []broker.BreakerEvent
	var trace []broker.TraceEntry
	synctest.Test(t, func(t *testing.T) {
		api := &overloadAPI{start: time.Now(), status: status, retryAfter: retryAfter}
		run, err := broker.New(broker.Config{Profile: profile, Secret: profiles.NewSecret("tok"), Transport: api})
		require.NoError(t, err)
		for i := 0; i < 80; i++ {
			time.Sleep(time.Until(api.start.Add(time.Duration(i) * 100 * time.Millisecond)))
			run.Call(context.Background(), broker.Request{Method: "GET", Path: "/items"})
		}
		events, trace = run.BreakerEvents(), run.Trace()
	})
	return events, trace
}

// The worked example: the 503 opens the window at 0.5 s until 5.5 s, the probe at 1.5 s is not
// ready, the one at 2.5 s answers 2xx and closes the window on the spot.
func TestBreakerEventsSeedChart(t *testing.T) {
	events, trace := seedEvents(t, 503, "5", true)
	want := []broker.BreakerEvent{
		{TMs: 500, Kind: broker.EventOpen, Status: 503, RetryAfter: "5", CooldownMs: 5000, UntilMs: 5500},
		{TMs: 1500, Kind: broker.EventProbe, Status: 503},
		{TMs: 2500, Kind: broker.EventProbe, Status: 200, OK: true},
		{TMs: 2500, Kind: broker.EventClose},
	}
	assert.Equal(t, want, events)
	for _, e := range trace {
		assert.NotEqual(t, "/status", e.Path, "probes stay out of the call trace")
	}
}

func TestBreakerEvents429WindowIsNeverProbed(t *testing.T) {
	events, _ := seedEvents(t, 429, "5", true)
	assert.Equal(t, []broker.BreakerEvent{
		{TMs: 500, Kind: broker.EventOpen, Status: 429, RetryAfter: "5", CooldownMs: 5000, UntilMs: 5500, Window429: true},
	}, events)
}

// No Retry-After: two 1 s windows, each opened by the call forwarded after the last one ended.
func TestBreakerEventsDefaultCooldown(t *testing.T) {
	events, _ := seedEvents(t, 503, "", false)
	assert.Equal(t, []broker.BreakerEvent{
		{TMs: 500, Kind: broker.EventOpen, Status: 503, CooldownMs: 1000, UntilMs: 1500},
		{TMs: 1500, Kind: broker.EventOpen, Status: 503, CooldownMs: 1000, UntilMs: 2500},
	}, events)
}

// A Retry-After over 30 s is clamped, and the event says so; a 429 arriving while a 503 window is
// open extends it and taints it for life.
func TestBreakerEventsClampAndExtend(t *testing.T) {
	profile := chartProfile(t, true)
	synctest.Test(t, func(t *testing.T) {
		replies := []struct {
			status     int
			retryAfter string
		}{{503, "120"}, {429, "31"}}
		var next atomic.Int32 // the two calls are in flight together
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			rep := replies[next.Add(1)-1]
			time.Sleep(10 * time.Millisecond)
			resp := reply(rep.status, nil)
			resp.Header.Set("Retry-After", rep.retryAfter)
			return resp, nil
		})
		run, err := broker.New(broker.Config{Profile: profile, Transport: rt})
		require.NoError(t, err)
		first := run.StartEnvelope([]byte(`{"method":"GET","path":"/items"}`))
		second := run.StartEnvelope([]byte(`{"method":"GET","path":"/items"}`)) // in flight together
		done := make(chan struct{})
		go func() { first.Complete(context.Background()); close(done) }()
		time.Sleep(time.Millisecond)
		second.Complete(context.Background())
		<-done
		assert.Equal(t, []broker.BreakerEvent{
			{TMs: 10, Kind: broker.EventOpen, Status: 503, RetryAfter: "120", CooldownMs: 30000, Clamped: true, UntilMs: 30010},
			{TMs: 11, Kind: broker.EventExtend, Status: 429, RetryAfter: "31", CooldownMs: 30000, Clamped: true, UntilMs: 30011, Window429: true},
		}, run.BreakerEvents())
	})
}

// The Retry-After text comes from the API: it is redacted like everything else it sends.
func TestBreakerEventsRedactRetryAfter(t *testing.T) {
	profile := chartProfile(t, false)
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp := reply(503, nil)
		resp.Header.Set("Retry-After", "sekrit-token-value")
		return resp, nil
	})
	run, err := broker.New(broker.Config{Profile: profile, Secret: profiles.NewSecret("sekrit-token-value"), Transport: rt})
	require.NoError(t, err)
	run.Call(context.Background(), broker.Request{Method: "GET", Path: "/items"})
	events := run.BreakerEvents()
	require.Len(t, events, 1)
	assert.NotContains(t, events[0].RetryAfter, "sekrit")
	assert.Equal(t, int64(1000), events[0].CooldownMs, "a malformed Retry-After is the 1 s default")
	assert.False(t, events[0].Clamped)
}

// A probe's 2xx does not close a window a 429 reached while the probe was out: the probe event
// says not ok, and there is no close event.
func TestBreakerEventsProbeAfter429IsNotOK(t *testing.T) {
	profile := chartProfile(t, true)
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.RequestURI() == "/v1/status" { // the probe: slow, then healthy
				time.Sleep(time.Second)
				return reply(200, nil), nil
			}
			if calls.Add(1) == 1 { // forwarded before the window opened; its 429 lands mid-probe
				time.Sleep(1500 * time.Millisecond)
				return reply(429, http.Header{"Retry-After": {"5"}}), nil
			}
			time.Sleep(10 * time.Millisecond)
			return reply(503, http.Header{"Retry-After": {"5"}}), nil
		})
		run, err := broker.New(broker.Config{Profile: profile, Transport: rt})
		require.NoError(t, err)
		slow := run.StartEnvelope([]byte(`{"method":"GET","path":"/items"}`))
		done := make(chan struct{})
		go func() { slow.Complete(context.Background()); close(done) }()
		synctest.Wait()                                                               // the slow call is out before the next one
		run.Call(context.Background(), broker.Request{Method: "GET", Path: "/items"}) // 503 at 10 ms opens
		time.Sleep(time.Second)
		resp := run.Call(context.Background(), broker.Request{Method: "GET", Path: "/items"}) // picked to probe at 1.01 s
		<-done
		assert.Equal(t, 503, resp.Status, "the picked call is shed")
		assert.Equal(t, []broker.BreakerEvent{
			{TMs: 10, Kind: broker.EventOpen, Status: 503, RetryAfter: "5", CooldownMs: 5000, UntilMs: 5010},
			{TMs: 1500, Kind: broker.EventExtend, Status: 429, RetryAfter: "5", CooldownMs: 5000, UntilMs: 6500, Window429: true},
			{TMs: 1010, Kind: broker.EventProbe, Status: 200, OK: false, LatencyMs: 1000},
		}, run.BreakerEvents())
	})
}
