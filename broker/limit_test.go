package broker_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/profiles"
)

// limitedProfile is a profile with a concurrency block.
func limitedProfile(t *testing.T, concurrency string, extra string) *profiles.Profile {
	return writeProfile(t, "http://api.invalid/v1", "routes:\n  - GET /pets/*\n  - GET /toys\n"+extra+"concurrency:\n"+concurrency)
}

func newLimitedRun(t testing.TB, p *profiles.Profile, rt http.RoundTripper, l *broker.Limits, id string, tier bulkhead.Tier) *broker.Broker {
	t.Helper()
	r, err := broker.New(broker.Config{Profile: p, Secret: profiles.NewSecret(secret), Transport: rt,
		RunID: id, Tool: "tool.js", Limits: l, Criticality: tier})
	require.NoError(t, err)
	return r
}

// slowAPI answers every call after d of fake time, with status.
func slowAPI(d time.Duration, status int) rtFunc {
	return func(r *http.Request) (*http.Response, error) {
		time.Sleep(d)
		return inMemReply(status, "{}"), nil
	}
}

// A call refused by the API limit is shed like a breaker shed: 503 with Retry-After, outcome
// shed, a reason naming the limit and the queue, no budget spent, the breaker untouched. The limit
// is shared: the other run's call holds the only slot.
func TestLimitShedIsBusyNotBroken(t *testing.T) {
	p := limitedProfile(t, "  limit: 1\n  max_queue: 0\n", "budget:\n  calls: 1\n")
	synctest.Test(t, func(t *testing.T) {
		limits := broker.NewLimits()
		api := slowAPI(100*time.Millisecond, 200)
		holder := newLimitedRun(t, p, api, limits, "holder", bulkhead.Normal)
		r := newLimitedRun(t, p, api, limits, "shed", bulkhead.Critical)
		var wg sync.WaitGroup
		wg.Go(func() { require.Equal(t, 200, get(t, holder, "/pets/1").Status) })
		synctest.Wait() // the holder's call is at the API

		g := get(t, r, "/pets/2")
		require.Equal(t, 503, g.Status)
		require.Equal(t, []string{"1"}, g.Headers["Retry-After"])
		require.Equal(t, "shed", g.own(t).Error)
		tr := r.Trace()
		require.Len(t, tr, 1)
		require.Equal(t, broker.Shed, tr[0].Outcome)
		require.Equal(t, "API limit: 1 in flight at limit 1 and the queue is full (0 queued)", tr[0].Reason)
		st := r.State()
		require.Equal(t, broker.BreakerClosed, st.Breaker)
		require.Equal(t, 1, st.Counters.Shed)

		wg.Wait()
		// The budget of one call was given back: the run's next call is forwarded.
		require.Equal(t, 200, get(t, r, "/pets/3").Status)
		a := r.Finish(broker.StatusOK, nil)
		require.Equal(t, 1, a.Shed)
		require.Equal(t, 1, a.Forwarded)
		require.Zero(t, a.BreakerOpens)
		require.Equal(t, map[string]uint64{"critical": 1, "normal": 0, "sheddable": 0}, limits.State()[0].Shed)
	})
}

// A call that waits for a slot carries its wait on the trace, and is then forwarded.
func TestLimitQueueWaitIsOnTheTrace(t *testing.T) {
	p := limitedProfile(t, "  limit: 1\n  max_queue: 4\n  queue_timeout: 1s\n", "")
	synctest.Test(t, func(t *testing.T) {
		r := newLimitedRun(t, p, slowAPI(100*time.Millisecond, 200), broker.NewLimits(), "q", bulkhead.Normal)
		var wg sync.WaitGroup
		for _, path := range []string{"/pets/1", "/pets/2", "/pets/3"} {
			wg.Go(func() { require.Equal(t, 200, get(t, r, path).Status) })
			synctest.Wait()
		}
		wg.Wait()
		var waits []float64
		for _, e := range r.Trace() {
			require.Equal(t, broker.Forwarded, e.Outcome)
			waits = append(waits, e.QueueMs)
		}
		require.ElementsMatch(t, []float64{0, 100, 200}, waits)
	})
}

// A waiting call past its tier's queue timeout is shed, and says how long it waited; a critical
// call gets twice the time, a sheddable one half.
func TestLimitSojournShedsByTier(t *testing.T) {
	p := limitedProfile(t, "  limit: 1\n  max_queue: 4\n  queue_timeout: 100ms\n", "")
	for _, tc := range []struct {
		tier   bulkhead.Tier
		waited float64
	}{{bulkhead.Sheddable, 50}, {bulkhead.Normal, 100}, {bulkhead.Critical, 200}} {
		synctest.Test(t, func(t *testing.T) {
			limits := broker.NewLimits()
			api := slowAPI(time.Second, 200)
			holder := newLimitedRun(t, p, api, limits, "holder", bulkhead.Normal)
			var wg sync.WaitGroup
			wg.Go(func() { get(t, holder, "/pets/1") })
			synctest.Wait()
			r := newLimitedRun(t, p, api, limits, "waiter", tc.tier)
			g := get(t, r, "/pets/2")
			require.Equal(t, 503, g.Status)
			e := r.Trace()[0]
			require.Equal(t, tc.waited, e.QueueMs, tc.tier)
			require.Contains(t, e.Reason, "over the "+tc.tier.String()+" call's queue timeout (limit 1, 1 in flight, 1 queued)")
			wg.Wait()
		})
	}
}

// A breaker that opened while the call waited is read again after the wait: the call is shed by
// the breaker's rule, and its budget given back.
func TestLimitRechecksTheBreakerAfterTheWait(t *testing.T) {
	p := limitedProfile(t, "  limit: 1\n  max_queue: 4\n", "budget:\n  calls: 2\n")
	synctest.Test(t, func(t *testing.T) {
		api := slowAPI(100*time.Millisecond, 503)
		r := newLimitedRun(t, p, api, broker.NewLimits(), "b", bulkhead.Normal)
		var wg sync.WaitGroup
		wg.Go(func() { require.Equal(t, 503, get(t, r, "/pets/1").Status) })
		synctest.Wait()
		g := get(t, r, "/pets/2") // waits 100 ms; the first call's 503 opens the breaker meanwhile
		wg.Wait()
		require.Equal(t, 503, g.Status)
		e := r.Trace()[1]
		require.Equal(t, broker.Shed, e.Outcome)
		require.Equal(t, "breaker opened after upstream 503 while the call waited for the API limit", e.Reason)
		require.Equal(t, 1, r.State().Counters.Forwarded)
	})
}

// The run ending while a call waits takes it out of the queue: it fails, and frees its place.
func TestLimitRunEndWhileWaiting(t *testing.T) {
	p := limitedProfile(t, "  limit: 1\n  max_queue: 1\n  queue_timeout: 10s\n", "")
	synctest.Test(t, func(t *testing.T) {
		limits := broker.NewLimits()
		r := newLimitedRun(t, p, slowAPI(time.Second, 200), limits, "end", bulkhead.Normal)
		var wg sync.WaitGroup
		wg.Go(func() { get(t, r, "/pets/1") })
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		resp := r.Call(ctx, broker.Request{Method: "GET", Path: "/pets/2"})
		require.Equal(t, 502, resp.Status)
		require.Equal(t, 0, limits.State()[0].Queued)
		wg.Wait()
		require.Equal(t, "call canceled: the run is ending", r.Trace()[1].Reason)
	})
}

// Overloaded replies teach the limit to come down; a retune swaps the parameters live and is
// refused whole, naming the parameter, when one is out of range.
func TestLimitLearnsAndRetunes(t *testing.T) {
	p := limitedProfile(t, "  limit: gradient2\n  min: 2\n  max: 32\n", "")
	synctest.Test(t, func(t *testing.T) {
		limits := broker.NewLimits()
		_, err := limits.Retune("petstore", func(c bulkhead.Config) bulkhead.Config { return c }, time.Now())
		require.ErrorIs(t, err, broker.ErrNoLimit)

		ok := newLimitedRun(t, p, slowAPI(10*time.Millisecond, 200), limits, "ok", bulkhead.Normal)
		get(t, ok, "/pets/1")
		for range 200 {
			var wg sync.WaitGroup
			for range limits.State()[0].Limit {
				wg.Go(func() { get(t, ok, "/pets/1") })
			}
			wg.Wait()
		}
		grown := limits.State()[0].Limit
		require.Greater(t, grown, 2)
		require.InDelta(t, 10, limits.State()[0].BaselineMs, 0.01)

		busy := newLimitedRun(t, p, slowAPI(10*time.Millisecond, 503), limits, "busy", bulkhead.Normal)
		get(t, busy, "/pets/1")
		require.Less(t, limits.State()[0].Limit, grown)

		st, err := limits.Retune("petstore", func(c bulkhead.Config) bulkhead.Config { c.Max = 8; return c }, time.Now())
		require.NoError(t, err)
		require.Equal(t, 8, st[0].Max)
		require.True(t, limits.State()[0].Retuned)
		_, err = limits.Retune("petstore", func(c bulkhead.Config) bulkhead.Config { c.Min = 9; return c }, time.Now())
		var ce *bulkhead.ConfigError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "max", ce.Field)
		require.Equal(t, 8, limits.State()[0].Max, "a refused retune changes nothing")
	})
}
