package broker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// overloadAPI is the seed's scripted upstream, on an in-memory transport so the test can run in
// a synctest bubble: overloaded from 0.5 s until it heals at 2.2 s, with a readiness route that
// answers 503 until then and 200 after.
type overloadAPI struct {
	start      time.Time
	status     int           // 503 or 429 while overloaded
	retryAfter string        // "" for none
	latency    time.Duration // how long each answer takes (fake time)
	mu         sync.Mutex
	probes     []*http.Request
}

const (
	overloadFrom = 500 * time.Millisecond
	healAt       = 2200 * time.Millisecond
)

func (a *overloadAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	elapsed := time.Since(a.start)
	time.Sleep(a.latency)
	healthy := elapsed < overloadFrom || elapsed >= healAt
	if req.URL.RequestURI() == "/v1/status" {
		a.mu.Lock()
		a.probes = append(a.probes, req)
		a.mu.Unlock()
		if healthy {
			return reply(200, nil), nil
		}
		return reply(503, nil), nil
	}
	if healthy {
		return reply(200, nil), nil
	}
	h := http.Header{}
	if a.retryAfter != "" {
		h.Set("Retry-After", a.retryAfter)
	}
	return reply(a.status, h), nil
}

func reply(status int, h http.Header) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("{}"))}
}

// span says what calls from..to (inclusive, by index; call i is made at i×100 ms) must see.
type span struct {
	from, to int
	outcome  broker.Outcome
	upstream int // the upstream status, 0 when not forwarded
}

type chartCase struct {
	status     int
	retryAfter string
	health     bool
	want       []span
	probes     int
	probesOK   int
	opens      int
}

func chartCases() map[string]chartCase {
	// The worked example in ARCHITECTURE.md, row by row.
	probed503 := []span{
		{0, 4, broker.Forwarded, 200},
		{5, 5, broker.Forwarded, 503},   // 0.5 s: opens the window until 5.5 s
		{6, 24, broker.Shed, 0},         // 1.5 s is picked but the probe is not ready
		{25, 79, broker.Forwarded, 200}, // 2.5 s: probe 2xx closes; the call goes on
	}
	// Retry-After 5 with nothing to probe (or a 429 window): shed until 5.5 s.
	waited := func(status int) []span {
		return []span{
			{0, 4, broker.Forwarded, 200},
			{5, 5, broker.Forwarded, status},
			{6, 54, broker.Shed, 0},
			{55, 79, broker.Forwarded, 200},
		}
	}
	// No Retry-After: 1 s windows. 1.5 s falls at the end of the first window, so it is forwarded,
	// meets the overload again and opens a second window until 2.5 s, when the API has healed.
	cooled := func(status int) []span {
		return []span{
			{0, 4, broker.Forwarded, 200},
			{5, 5, broker.Forwarded, status},
			{6, 14, broker.Shed, 0},
			{15, 15, broker.Forwarded, status},
			{16, 24, broker.Shed, 0},
			{25, 79, broker.Forwarded, 200},
		}
	}
	return map[string]chartCase{
		"503/retry-after-5/health":     {503, "5", true, probed503, 2, 1, 1},
		"503/retry-after-5/no-health":  {503, "5", false, waited(503), 0, 0, 1},
		"503/no-retry-after/health":    {503, "", true, cooled(503), 0, 0, 2},
		"503/no-retry-after/no-health": {503, "", false, cooled(503), 0, 0, 2},
		"429/retry-after-5/health":     {429, "5", true, waited(429), 0, 0, 1},
		"429/retry-after-5/no-health":  {429, "5", false, waited(429), 0, 0, 1},
		"429/no-retry-after/health":    {429, "", true, cooled(429), 0, 0, 2},
		"429/no-retry-after/no-health": {429, "", false, cooled(429), 0, 0, 2},
	}
}

// TestSeedChart replays seed 000's chart: one call every 100 ms for 8 s, in fake time.
func TestSeedChart(t *testing.T) {
	for name, tc := range chartCases() {
		t.Run(name, func(t *testing.T) {
			profile := chartProfile(t, tc.health)
			synctest.Test(t, func(t *testing.T) {
				api := &overloadAPI{start: time.Now(), status: tc.status, retryAfter: tc.retryAfter}
				run, err := broker.New(broker.Config{Profile: profile, Secret: profiles.NewSecret("tok"), Transport: api})
				require.NoError(t, err)

				seen := make([]broker.Response, 80)
				for i := range seen {
					time.Sleep(time.Until(api.start.Add(time.Duration(i) * 100 * time.Millisecond)))
					seen[i] = run.Call(context.Background(), broker.Request{Method: "GET", Path: "/items"})
				}

				trace := run.Trace()
				require.Len(t, trace, 80)
				for _, s := range tc.want {
					for i := s.from; i <= s.to; i++ {
						at := fmt.Sprintf("call %d at %.1f s", i, float64(i)/10)
						assert.Equal(t, s.outcome, trace[i].Outcome, at)
						assert.Equal(t, s.upstream, trace[i].UpstreamStatus, at)
						assert.Equal(t, int64(i*100), trace[i].TMs, at)
						if s.outcome == broker.Shed {
							assert.Equal(t, 503, seen[i].Status, at)
							assert.NotEmpty(t, seen[i].Headers.Get("Retry-After"), at)
						} else {
							assert.Equal(t, s.upstream, seen[i].Status, at)
						}
					}
				}
				c := run.Counters()
				assert.Equal(t, tc.probes, c.Probes, "probes")
				assert.Equal(t, tc.probesOK, c.ProbesOK, "probes_ok")
				assert.Equal(t, tc.probes, len(api.probes), "probe requests the API saw")
				assert.Equal(t, tc.opens, c.BreakerOpens, "breaker_opens")
				assert.Equal(t, countOutcome(tc.want, broker.Shed), c.Shed, "host_calls_shed")
				assert.Equal(t, countOutcome(tc.want, broker.Forwarded), c.Forwarded, "host_calls_forwarded")
			})
		})
	}
}

// TestSeedChartProbeTimes pins when the worked example's two probes go out: 1.5 s and 2.5 s.
func TestSeedChartProbeTimes(t *testing.T) {
	profile := chartProfile(t, true)
	synctest.Test(t, func(t *testing.T) {
		api := &overloadAPI{start: time.Now(), status: 503, retryAfter: "5"}
		var probeTimes []time.Duration
		probeTimer := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.RequestURI() == "/v1/status" {
				probeTimes = append(probeTimes, time.Since(api.start))
				assert.Equal(t, "GET", req.Method)
				assert.Equal(t, "Bearer tok", req.Header.Get("Authorization"))
			}
			return api.RoundTrip(req)
		})
		run, err := broker.New(broker.Config{Profile: profile, Secret: profiles.NewSecret("tok"), Transport: probeTimer})
		require.NoError(t, err)
		for i := 0; i < 80; i++ {
			time.Sleep(time.Until(api.start.Add(time.Duration(i) * 100 * time.Millisecond)))
			run.Call(context.Background(), broker.Request{Method: "GET", Path: "/items"})
		}
		assert.Equal(t, []time.Duration{1500 * time.Millisecond, 2500 * time.Millisecond}, probeTimes)
		trace := run.Trace()
		assert.Equal(t, broker.ProbeNotReady, trace[15].Probe, "1.5 s: picked, not ready")
		assert.Equal(t, broker.ProbeOK, trace[25].Probe, "2.5 s: picked, 2xx")
		for _, e := range run.Trace() {
			assert.NotEqual(t, "/status", e.Path, "probes never appear in the trace")
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func countOutcome(spans []span, o broker.Outcome) int {
	n := 0
	for _, s := range spans {
		if s.outcome == o {
			n += s.to - s.from + 1
		}
	}
	return n
}

func chartProfile(t *testing.T, health bool) *profiles.Profile {
	t.Helper()
	text := "base_url: http://api.test/v1\ncredential:\n  scheme: Bearer\n  env: TOKEN\nroutes:\n  - GET /items\nbudget:\n  calls: 1000\n"
	if health {
		text += "health_check: GET /status\n"
	}
	path := filepath.Join(t.TempDir(), "chart.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	p, err := profiles.LoadFile(path)
	require.NoError(t, err)
	return p
}

// TestSeedChartWithLatency is the worked example with a 1 ms upstream, as on a real loopback. The
// 503 reaches the broker at 0.501 s, so the window opened then: the call at 1.5 s is 999 ms in and
// is shed, and each probe goes out one call later, at 1.6 s and 2.6 s. This is the deterministic
// result the real-time demo test (cmd/plimsoll-run) is held to.
func TestSeedChartWithLatency(t *testing.T) {
	profile := chartProfile(t, true)
	synctest.Test(t, func(t *testing.T) {
		api := &overloadAPI{start: time.Now(), status: 503, retryAfter: "5", latency: time.Millisecond}
		run, err := broker.New(broker.Config{Profile: profile, Secret: profiles.NewSecret("tok"), Transport: api})
		require.NoError(t, err)
		for i := 0; i < 80; i++ {
			time.Sleep(time.Until(api.start.Add(time.Duration(i) * 100 * time.Millisecond)))
			run.Call(context.Background(), broker.Request{Method: "GET", Path: "/items"})
		}

		want := []span{
			{0, 4, broker.Forwarded, 200},
			{5, 5, broker.Forwarded, 503},
			{6, 25, broker.Shed, 0}, // the probe at 1.6 s finds the API not ready
			{26, 79, broker.Forwarded, 200},
		}
		trace := run.Trace()
		for _, s := range want {
			for i := s.from; i <= s.to; i++ {
				assert.Equal(t, s.outcome, trace[i].Outcome, "call %d", i)
			}
		}
		assert.Equal(t, broker.ProbeNotReady, trace[16].Probe)
		assert.Equal(t, broker.ProbeOK, trace[26].Probe)
		c := run.Counters()
		assert.Equal(t, 60, c.Forwarded)
		assert.Equal(t, 20, c.Shed)
		assert.Equal(t, 2, c.Probes)
	})
}
