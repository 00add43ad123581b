package broker_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// flag is the daemon's side of a forced-open flag, as a test holds it.
type flag struct{ reason atomic.Pointer[string] }

func (f *flag) set(why string) { f.reason.Store(&why) }
func (f *flag) clear()         { f.reason.Store(nil) }
func (f *flag) read() (string, bool) {
	if p := f.reason.Load(); p != nil {
		return *p, true
	}
	return "", false
}

func forcedRun(t *testing.T, p *profiles.Profile, rt http.RoundTripper, f *flag) *broker.Broker {
	t.Helper()
	r, err := broker.New(broker.Config{Profile: p, Secret: profiles.NewSecret(secret), Transport: rt,
		RunID: "run-forced", Tool: "tool.js", ForcedOpen: f.read})
	require.NoError(t, err)
	return r
}

func TestForcedOpenShedsWithoutProbingAndClearRestores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := overloadedOnce(503, "10", 200)
		f := &flag{}
		run := forcedRun(t, writeProfile(t, "http://api.test", healthProfile+"budget:\n  calls: 2\n"), api, f)
		c := newClock()

		assert.Equal(t, 503, doGet(run, "/pets").Status) // opens [0, 10s)
		f.set("INC-7: petstore answers 500s")
		for _, at := range []int{1000, 2000, 3000} { // each would be picked to probe, were it not forced
			c.at(ms(at))
			resp := doGet(run, "/pets")
			assertShed(t, resp, "30")
			assert.Contains(t, string(resp.Body), "forced open by the operator: INC-7: petstore answers 500s")
			assert.Equal(t, broker.BreakerOpen, run.State().Breaker, "forcing is not the breaker's business")
		}
		assert.Equal(t, []string{"/pets"}, api.paths(), "no probe and no call while forced open")

		f.clear()
		c.at(ms(4000))
		assert.Equal(t, 200, doGet(run, "/pets").Status, "cleared: picked to probe, the probe answers 2xx, the call goes on")
		assert.Equal(t, []string{"/pets", "/status", "/pets"}, api.paths())
		assert.Equal(t, broker.BreakerClosed, run.State().Breaker)

		tr := run.Trace()
		require.Len(t, tr, 5)
		for _, e := range tr[1:4] {
			assert.Equal(t, broker.Shed, e.Outcome)
			assert.Equal(t, broker.ForcedOpenReason+"INC-7: petstore answers 500s", e.Reason)
			assert.Empty(t, e.Probe)
		}
		want := broker.Counters{HostCalls: 5, Forwarded: 2, Shed: 3, Probes: 1, ProbesOK: 1, BreakerOpens: 1}
		assert.Equal(t, want, run.Counters(), "the forced sheds charged no budget: both forwards fit a budget of 2")
		a := run.Finish(broker.StatusOK, nil)
		assert.Equal(t, "INC-7: petstore answers 500s", a.ForcedOpen)
		assert.Contains(t, string(a.Line()), `"forced_open":"INC-7: petstore answers 500s"`)
	})
}

func TestForcedOpenShedsTheFirstCallAndNothingReachesTheUpstream(t *testing.T) {
	api := newUpstream(t, nil)
	f := &flag{}
	f.set("maintenance")
	run := forcedRun(t, writeProfile(t, api.URL, petRoutes), api.Client().Transport, f)
	g := get(t, run, "/pets")
	assert.Equal(t, http.StatusServiceUnavailable, g.Status)
	assert.Equal(t, []string{"30"}, g.Headers["Retry-After"])
	assert.Equal(t, "shed", g.own(t).Error)
	api.untouched(t)
	a := run.Finish(broker.StatusOK, nil)
	assert.Equal(t, 1, a.Shed)
	assert.Equal(t, "maintenance", a.ForcedOpen)

	unforced := newRun(t, writeProfile(t, api.URL, petRoutes), api.Client().Transport)
	assert.Equal(t, 200, get(t, unforced, "/pets").Status)
	assert.NotContains(t, string(unforced.Finish(broker.StatusOK, nil).Line()), "forced_open", "written only when a call was forced")
}

// TestForcedBetweenPickAndProbeSendsNoProbe forces the profile open after a call was picked to
// probe (at submission) and before its I/O: no probe goes out, and the next call may probe.
func TestForcedBetweenPickAndProbeSendsNoProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := overloadedOnce(503, "10", 200)
		f := &flag{}
		run := forcedRun(t, writeProfile(t, "http://api.test", healthProfile), api, f)
		c := newClock()
		doGet(run, "/pets")
		c.at(ms(1000))
		started := run.StartEnvelope(envelope(t, map[string]any{"method": "GET", "path": "/pets"}))
		st := run.State()
		assert.Equal(t, broker.BreakerProbing, st.Breaker)
		assert.Equal(t, 1, st.InFlight)
		f.set("now")
		g := decodeEnvelope(t, started.CompleteEnvelope(context.Background()))
		assert.Equal(t, http.StatusServiceUnavailable, g.Status)
		assert.Contains(t, string(g.bytes(t)), "forced open by the operator: now")
		assert.Equal(t, []string{"/pets"}, api.paths(), "no probe sent")
		assert.Equal(t, broker.BreakerOpen, run.State().Breaker, "the pick is given back")

		f.clear()
		c.at(ms(2000))
		assert.Equal(t, 200, doGet(run, "/pets").Status)
		assert.Equal(t, []string{"/pets", "/status", "/pets"}, api.paths())
	})
}

// TestStateWhileACallIsHeld reads a run's snapshot while one call is held upstream.
func TestStateWhileACallIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		api := &script{answer: func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.RequestURI(), "/held") {
				<-hold
				return inMemReply(429, "", "Retry-After", "5"), nil
			}
			return inMemReply(200, "[]"), nil
		}}
		run := newRun(t, writeProfile(t, "http://api.test", healthProfile), api)
		doGet(run, "/pets")
		doGet(run, "/nope") // denied
		var wg sync.WaitGroup
		wg.Go(func() { doGet(run, "/pets/held") })
		synctest.Wait()
		time.Sleep(1500 * time.Millisecond)
		st := run.State()
		assert.Equal(t, 1, st.InFlight)
		assert.Equal(t, broker.Counters{HostCalls: 2, Forwarded: 1, Denied: 1}, st.Counters)
		assert.Equal(t, broker.BreakerClosed, st.Breaker)
		assert.Equal(t, int64(1500), st.ElapsedMs)
		assert.Equal(t, "run-test", st.RunID)
		close(hold)
		wg.Wait()
		st = run.State()
		assert.Zero(t, st.InFlight)
		assert.Equal(t, broker.Breaker429Window, st.Breaker)
		assert.Equal(t, st.Start.Add(1500*time.Millisecond+5*time.Second), st.BreakerUntil)
		assert.Equal(t, st.Start.Add(1500*time.Millisecond), st.BreakerOpenedAt)
		run.Finish(broker.StatusOK, nil)
		assert.True(t, run.State().Finished)
	})
}
