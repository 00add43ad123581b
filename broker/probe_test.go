package broker_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/breaker"
	"github.com/plimsoll/plimsoll/broker"
)

// These tests run in a synctest bubble: time.Sleep moves the fake clock to a chosen instant, so
// each call happens exactly when the test says, and durations can be asserted exactly.

// clock sleeps until chosen offsets from the moment it was made.
type clock struct{ start time.Time }

func newClock() clock { return clock{time.Now()} }

func (c clock) at(d time.Duration) {
	time.Sleep(time.Until(c.start.Add(d)))
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func doGet(run *broker.Broker, path string, headers ...string) broker.Response {
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	return run.Call(context.Background(), broker.Request{Method: "GET", Path: path, Headers: h})
}

func assertShed(t *testing.T, resp broker.Response, retryAfter string) {
	t.Helper()
	assert.Equal(t, http.StatusServiceUnavailable, resp.Status)
	assert.Equal(t, []string{"shed"}, resp.Headers[OutcomeHeaderName])
	assert.Equal(t, []string{retryAfter}, resp.Headers["Retry-After"])
	assert.Contains(t, string(resp.Body), `"error":"shed"`)
}

const healthProfile = petRoutes + "health_check: GET /status\n"

func TestProbeCarriesCredentialAndIsNeitherTracedNorBudgeted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pets int
		api := &script{answer: func(r *http.Request) (*http.Response, error) {
			if r.URL.RequestURI() == "/v1/status" {
				return inMemReply(200, "up"), nil
			}
			pets++
			if pets == 1 {
				return inMemReply(503, "busy", "Retry-After", "5"), nil
			}
			return inMemReply(200, "[]"), nil
		}}
		run := newRun(t, writeProfile(t, "http://api.test/v1", healthProfile+"budget:\n  calls: 2\n"), api)
		c := newClock()

		assert.Equal(t, 503, doGet(run, "/pets").Status) // opens [0, 5s)
		c.at(ms(500))
		assertShed(t, doGet(run, "/pets"), "5") // too soon to probe
		c.at(ms(1000))
		before := time.Now()
		resp := doGet(run, "/pets") // picked: the probe answers 2xx, the call goes on
		assert.Equal(t, 200, resp.Status)
		assert.Equal(t, "[]", string(resp.Body))
		assert.Zero(t, time.Since(before))
		c.at(ms(1500))
		assert.Equal(t, http.StatusTooManyRequests, doGet(run, "/pets").Status, "two forwarded calls spent the budget of 2; the probe did not")

		reqs := api.requests()
		require.Len(t, reqs, 3)
		probe := reqs[1]
		assert.Equal(t, "GET", probe.Method)
		assert.Equal(t, "http", probe.URL.Scheme)
		assert.Equal(t, "api.test", probe.URL.Host)
		assert.Equal(t, "/v1/status", probe.URL.RequestURI())
		assert.Equal(t, "api.test", probe.Host)
		assert.Equal(t, []string{credScheme + " " + secret}, probe.Header[credHeader])
		assert.Nil(t, probe.Body)
		assert.Equal(t, []string{"/v1/pets", "/v1/status", "/v1/pets"}, api.paths())

		var outcomes []broker.Outcome
		for _, e := range run.Trace() {
			outcomes = append(outcomes, e.Outcome)
			assert.Equal(t, "/pets", e.Path, "probes never appear in the trace")
		}
		assert.Equal(t, []broker.Outcome{broker.Forwarded, broker.Shed, broker.Forwarded, broker.OverBudget}, outcomes)
		assert.Equal(t, broker.Counters{HostCalls: 4, Forwarded: 2, Shed: 1, OverBudget: 1,
			Probes: 1, ProbesOK: 1, BreakerOpens: 1}, run.Counters())
	})
}

func TestProbeThatHangsIsGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &script{answer: func(r *http.Request) (*http.Response, error) {
			if r.URL.RequestURI() == "/status" {
				<-r.Context().Done()
				return nil, r.Context().Err()
			}
			return inMemReply(503, "", "Retry-After", "10"), nil
		}}
		run := newRun(t, writeProfile(t, "http://api.test", healthProfile), api)
		c := newClock()

		doGet(run, "/pets") // opens [0, 10s)
		c.at(ms(1000))
		var wg sync.WaitGroup
		wg.Go(func() {
			start := time.Now()
			resp := doGet(run, "/pets") // picked; its probe never answers
			assert.Equal(t, breaker.ProbeTimeout, time.Since(start), "given up after exactly the probe timeout")
			assertShed(t, resp, "7")
			assert.Contains(t, string(resp.Body), "health probe GET /status answered nothing in time")
		})
		c.at(ms(1500))
		start := time.Now()
		assertShed(t, doGet(run, "/pets"), "9") // a probe is in flight: shed at once, no second probe
		assert.Zero(t, time.Since(start))
		wg.Wait()

		assert.Equal(t, []string{"/pets", "/status"}, api.paths())
		assert.Equal(t, broker.Counters{HostCalls: 3, Forwarded: 1, Shed: 2, Probes: 1, BreakerOpens: 1}, run.Counters())
	})
}

func TestNo429WindowIsProbed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := overloadedOnce(429, "5", 200)
		run := newRun(t, writeProfile(t, "http://api.test", healthProfile), api)
		c := newClock()
		doGet(run, "/pets")
		for at := 250; at < 5000; at += 250 {
			c.at(ms(at))
			resp := doGet(run, "/pets")
			require.Equal(t, http.StatusServiceUnavailable, resp.Status, "at %d ms", at)
			assert.Contains(t, string(resp.Body), "after upstream 429")
		}
		c.at(ms(5000))
		assert.Equal(t, 200, doGet(run, "/pets").Status, "the window ends at Retry-After")
		assert.Equal(t, []string{"/pets", "/pets"}, api.paths(), "no probe in a 429 window")
		cnt := run.Counters()
		assert.Zero(t, cnt.Probes)
		assert.Equal(t, 19, cnt.Shed)
	})
}

// TestA503ExtendsAnOpen429Window has two calls in flight: the first is answered 429, which opens
// a 429 window; the second is answered 503 with a longer Retry-After half a second later. The
// window is extended, and stays a 429 window: never probed.
func TestA503ExtendsAnOpen429Window(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := map[string]chan struct{}{"A": make(chan struct{}), "B": make(chan struct{})}
		api := &script{answer: func(r *http.Request) (*http.Response, error) {
			switch r.Header.Get("X-Call") {
			case "A":
				<-release["A"]
				return inMemReply(429, "", "Retry-After", "2"), nil
			case "B":
				<-release["B"]
				return inMemReply(503, "", "Retry-After", "10"), nil
			}
			if r.URL.RequestURI() == "/status" {
				return inMemReply(200, ""), nil
			}
			return inMemReply(200, ""), nil
		}}
		run := newRun(t, writeProfile(t, "http://api.test", healthProfile), api)
		c := newClock()

		var wg sync.WaitGroup
		wg.Go(func() { assert.Equal(t, 429, doGet(run, "/pets", "X-Call", "A").Status) })
		wg.Go(func() { assert.Equal(t, 503, doGet(run, "/pets", "X-Call", "B").Status) })
		synctest.Wait() // both in flight
		close(release["A"])
		synctest.Wait() // A answered: a 429 window [0, 2s)
		c.at(ms(500))
		close(release["B"]) // 503, Retry-After 10: until 10.5 s
		wg.Wait()

		c.at(ms(1000))
		assertShed(t, doGet(run, "/pets"), "10")
		for at := 1500; at < 10500; at += 500 {
			c.at(ms(at))
			resp := doGet(run, "/pets")
			require.Equal(t, http.StatusServiceUnavailable, resp.Status, "at %d ms", at)
			assert.Contains(t, string(resp.Body), "after upstream 429")
		}
		c.at(ms(10500))
		assert.Equal(t, 200, doGet(run, "/pets").Status)
		for _, p := range api.paths() {
			assert.NotEqual(t, "/status", p, "a 429 window is never probed")
		}
		cnt := run.Counters()
		assert.Zero(t, cnt.Probes)
		assert.Equal(t, 1, cnt.BreakerOpens)
		assert.Equal(t, 3, cnt.Forwarded)
		assert.Equal(t, 19, cnt.Shed)
	})
}

func TestAProbeAnswering429MakesA429Window(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := overloadedOnce(503, "6", 429)
		run := newRun(t, writeProfile(t, "http://api.test", healthProfile), api)
		c := newClock()
		doGet(run, "/pets")
		for at := 1000; at < 6000; at += 500 {
			c.at(ms(at))
			assert.Equal(t, http.StatusServiceUnavailable, doGet(run, "/pets").Status, "at %d ms", at)
		}
		c.at(ms(6000))
		assert.Equal(t, 200, doGet(run, "/pets").Status)
		assert.Equal(t, []string{"/pets", "/status", "/pets"}, api.paths(), "one probe, then none")
		assert.Equal(t, 1, run.Counters().Probes)
		assert.Zero(t, run.Counters().ProbesOK)
	})
}

func TestRetryAfterIsCappedAt30s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n int
		api := &script{answer: func(r *http.Request) (*http.Response, error) {
			if n++; n == 1 {
				return inMemReply(503, "", "Retry-After", "120"), nil
			}
			return inMemReply(200, ""), nil
		}}
		run := newRun(t, writeProfile(t, "http://api.test", petRoutes), api)
		c := newClock()
		doGet(run, "/pets")
		assertShed(t, doGet(run, "/pets"), "30")
		c.at(ms(29999))
		assertShed(t, doGet(run, "/pets"), "1")
		c.at(ms(30000))
		assert.Equal(t, 200, doGet(run, "/pets").Status, "shedding stops at 30 s, not 120 s")
		assert.Equal(t, 2, n)
	})
}

func TestRetryAfterHTTPDate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n int
		c := newClock()
		require.Zero(t, c.start.Nanosecond(), "the bubble starts on a whole second")
		cases := map[int]string{
			1: c.start.Add(7 * time.Second).UTC().Format(http.TimeFormat), // opens [0, 7s)
			4: "Fri, 31 Dec 1999 23:00:00 GMT",                            // past: no window
			5: "soon",                                                     // malformed: the default 1 s
		}
		api := &script{answer: func(r *http.Request) (*http.Response, error) {
			n++
			if ra, ok := cases[n]; ok {
				return inMemReply(503, "", "Retry-After", ra), nil
			}
			return inMemReply(200, ""), nil
		}}
		run := newRun(t, writeProfile(t, "http://api.test", petRoutes), api)

		doGet(run, "/pets")
		assertShed(t, doGet(run, "/pets"), "7")
		c.at(ms(6999))
		assertShed(t, doGet(run, "/pets"), "1")
		c.at(ms(7000))
		assert.Equal(t, 200, doGet(run, "/pets").Status) // n=2
		assert.Equal(t, 200, doGet(run, "/pets").Status) // n=3
		assert.Equal(t, 503, doGet(run, "/pets").Status) // n=4, a date in the past
		assert.Equal(t, 503, doGet(run, "/pets").Status, "no window opened")
		assertShed(t, doGet(run, "/pets"), "1")
		c.at(ms(7999))
		assertShed(t, doGet(run, "/pets"), "1")
		c.at(ms(8000))
		assert.Equal(t, 200, doGet(run, "/pets").Status)
		assert.Equal(t, 2, run.Counters().BreakerOpens)
	})
}
