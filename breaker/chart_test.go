package breaker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The product page's chart, driven through the breaker with synthetic times: one call every
// 100 ms for 8 s. The API answers every forwarded call with an overload status from 0.5 s until
// it heals at 2.2 s; the health route answers 503 before 2.2 s and 200 from then on. Probes
// answer instantly, so a picked call's fate is settled at its own instant.

const (
	chartCalls   = 80
	chartStepMs  = 100
	overloadFrom = 500
	healedAt     = 2200
)

// outcome is what became of one call of the chart.
type outcome string

const (
	forwarded     outcome = "forwarded"
	shed          outcome = "shed"
	probeNotReady outcome = "probe, not ready, shed"
	probeReady    outcome = "probe, 2xx, forwarded"
)

// span says that the calls from fromMs to toMs, both included, all had outcome want.
type span struct {
	fromMs, toMs int
	want         outcome
}

// expectChart lays spans out over the 80 calls and insists that they cover each call once.
func expectChart(t *testing.T, spans ...span) []outcome {
	t.Helper()
	want := make([]outcome, chartCalls)
	for _, s := range spans {
		for ms := s.fromMs; ms <= s.toMs; ms += chartStepMs {
			i := ms / chartStepMs
			require.Empty(t, want[i], "expectation covers %d ms twice", ms)
			want[i] = s.want
		}
	}
	for i, w := range want {
		require.NotEmpty(t, w, "expectation misses %d ms", i*chartStepMs)
	}
	return want
}

type chartRun struct {
	outcomes []outcome
	probes   int
	opens    int
}

// runChart plays the chart against a fresh breaker.
func runChart(health bool, overload int, retryAfter string) chartRun {
	b := New(health)
	var run chartRun
	forward := func(ms int) {
		if ms >= overloadFrom && ms < healedAt {
			b.RecordReply(at(ms), overload, retryAfter)
			return
		}
		b.RecordReply(at(ms), 200, "")
	}
	for i := range chartCalls {
		ms := i * chartStepMs
		switch b.Decide(at(ms)) {
		case Forward:
			forward(ms)
			run.outcomes = append(run.outcomes, forwarded)
		case Shed:
			run.outcomes = append(run.outcomes, shed)
		case Probe:
			run.probes++
			if ms < healedAt {
				b.RecordProbe(at(ms), 503)
				run.outcomes = append(run.outcomes, probeNotReady)
				continue
			}
			b.RecordProbe(at(ms), 200)
			forward(ms)
			run.outcomes = append(run.outcomes, probeReady)
		}
	}
	run.opens = b.Opens()
	return run
}

func TestChart(t *testing.T) {
	// One window [0.5 s, 5.5 s), waited out to the end.
	waitedOutFiveSeconds := []span{
		{0, 500, forwarded},
		{600, 5400, shed},
		{5500, 7900, forwarded},
	}
	// With no Retry-After each window lasts 1 s, which is exactly when its first probe would
	// become due, so no probe is ever picked: the window ends at that instant instead.
	twoOneSecondWindows := []span{
		{0, 500, forwarded}, // 0.5 s opens [0.5, 1.5)
		{600, 1400, shed},
		{1500, 1500, forwarded}, // still overloaded: opens [1.5, 2.5)
		{1600, 2400, shed},
		{2500, 7900, forwarded}, // healed
	}
	cases := []struct {
		overload   int
		retryAfter string
		health     bool
		spans      []span
		wantProbes int
		wantOpens  int
	}{
		{503, "5", true, []span{
			{0, 400, forwarded},
			{500, 500, forwarded}, // the 503 opens the window until 5.5 s
			{600, 1400, shed},
			{1500, 1500, probeNotReady},
			{1600, 2400, shed},
			{2500, 2500, probeReady}, // the breaker closes and this call is forwarded
			{2600, 7900, forwarded},
		}, 2, 1},
		{503, "5", false, waitedOutFiveSeconds, 0, 1},
		{429, "5", true, waitedOutFiveSeconds, 0, 1}, // a 429 window is never probed
		{429, "5", false, waitedOutFiveSeconds, 0, 1},
		{503, "", true, twoOneSecondWindows, 0, 2},
		{503, "", false, twoOneSecondWindows, 0, 2},
		{429, "", true, twoOneSecondWindows, 0, 2},
		{429, "", false, twoOneSecondWindows, 0, 2},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%d/Retry-After=%q/health=%t", c.overload, c.retryAfter, c.health)
		t.Run(name, func(t *testing.T) {
			want := expectChart(t, c.spans...)
			got := runChart(c.health, c.overload, c.retryAfter)
			for i := range chartCalls {
				assert.Equal(t, want[i], got.outcomes[i], "call at %d ms", i*chartStepMs)
			}
			assert.Equal(t, c.wantProbes, got.probes, "probes")
			assert.Equal(t, c.wantOpens, got.opens, "breaker opens")
		})
	}
}
