package breaker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecisionString(t *testing.T) {
	assert.Equal(t, "forward", Forward.String())
	assert.Equal(t, "shed", Shed.String())
	assert.Equal(t, "probe", Probe.String())
	assert.Equal(t, "Decision(7)", Decision(7).String())
}

func TestNewBreakerIsClosed(t *testing.T) {
	b := New(true)
	assert.Equal(t, Forward, b.Decide(at(0)))
	assert.False(t, b.Open(at(0)))
	assert.False(t, b.Is429Window())
	assert.Zero(t, b.Opens())
}

func TestOnlyOverloadStatusesOpen(t *testing.T) {
	for _, status := range []int{0, 200, 204, 301, 400, 404, 500, 502, 504} {
		b := New(true)
		// When a forwarded call gets a reply that is not 503 or 429
		opened := b.RecordReply(at(0), status, "5")
		// Then the breaker stays closed
		assert.False(t, opened, "status %d", status)
		assert.False(t, b.Open(at(1)), "status %d", status)
		assert.Equal(t, Forward, b.Decide(at(1)), "status %d", status)
		assert.Zero(t, b.Opens(), "status %d", status)
	}
}

func TestOverloadedReplyOpensWindowForItsCooldown(t *testing.T) {
	cases := []struct {
		name       string
		status     int
		retryAfter string
		wantEndMs  int
	}{
		{"503 with Retry-After", 503, "5", 5000},
		{"429 with Retry-After", 429, "5", 5000},
		{"no Retry-After gives the default", 503, "", 1000},
		{"malformed Retry-After gives the default", 429, "soon", 1000},
		{"long Retry-After is capped", 503, "120", 30000},
		{"HTTP-date", 503, "Fri, 14 Mar 2025 12:00:03 GMT", 3000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := New(false)
			// Given a closed breaker, when an overloaded reply arrives at 0
			require.True(t, b.RecordReply(at(0), c.status, c.retryAfter))
			// Then calls are shed over [0, end) and forwarded from end on
			assert.Equal(t, Shed, b.Decide(at(0)))
			assert.Equal(t, Shed, b.Decide(at(c.wantEndMs-1)))
			assert.True(t, b.Open(at(c.wantEndMs-1)))
			assert.False(t, b.Open(at(c.wantEndMs)))
			assert.Equal(t, Forward, b.Decide(at(c.wantEndMs)))
			assert.Equal(t, c.status == 429, b.Is429Window())
			assert.Equal(t, 1, b.Opens())
		})
	}
}

func TestZeroLengthWindowOpensNothing(t *testing.T) {
	for _, ra := range []string{"0", "Fri, 14 Mar 2025 11:00:00 GMT"} {
		b := New(true)
		// When an overloaded reply says to retry right away
		opened := b.RecordReply(at(0), 503, ra)
		// Then no window opens and none is counted
		assert.False(t, opened, ra)
		assert.False(t, b.Open(at(0)), ra)
		assert.Equal(t, Forward, b.Decide(at(0)), ra)
		assert.Zero(t, b.Opens(), ra)
	}
}

func TestOverloadedReplyExtendsOpenWindow(t *testing.T) {
	b := New(false)
	// Given a window [0, 5 s)
	require.True(t, b.RecordReply(at(0), 503, "5"))
	// When another 503 at 1 s asks for 10 s
	opened := b.RecordReply(at(1000), 503, "10")
	// Then the window is extended to 11 s, not reopened
	assert.False(t, opened)
	assert.Equal(t, 1, b.Opens())
	assert.True(t, b.Open(at(10999)))
	assert.False(t, b.Open(at(11000)))

	// When a 503 at 2 s asks for only 1 s, the window is not shortened
	assert.False(t, b.RecordReply(at(2000), 503, "1"))
	assert.True(t, b.Open(at(10999)))
	assert.False(t, b.Open(at(11000)))
}

func TestNonOverloadReplyDoesNotCloseWindow(t *testing.T) {
	b := New(true)
	require.True(t, b.RecordReply(at(0), 503, "5"))
	// A call forwarded before the window opened may still come back 2xx
	assert.False(t, b.RecordReply(at(100), 200, ""))
	assert.True(t, b.Open(at(4999)))
}

func Test429TaintSurvivesA503Extension(t *testing.T) {
	b := New(true)
	// Given a window opened by a 429
	require.True(t, b.RecordReply(at(0), 429, "5"))
	// When a 503 extends it to 11 s
	require.False(t, b.RecordReply(at(1000), 503, "10"))
	// Then it is still a 429 window, and is never probed for its whole life
	assert.True(t, b.Is429Window())
	for ms := 0; ms < 11000; ms += 100 {
		require.Equal(t, Shed, b.Decide(at(ms)), "at %d ms", ms)
	}
	assert.Equal(t, Forward, b.Decide(at(11000)))
}

func Test429ExtendingA503WindowTaintsIt(t *testing.T) {
	b := New(true)
	require.True(t, b.RecordReply(at(0), 503, "5"))
	require.False(t, b.Is429Window())
	// When a 429 arrives while the 503 window is open, even one asking for no wait at all
	b.RecordReply(at(200), 429, "0")
	// Then the window becomes a 429 window and no probe is picked
	assert.True(t, b.Is429Window())
	assert.Equal(t, Shed, b.Decide(at(1000)))
	assert.Equal(t, Shed, b.Decide(at(3000)))
}

func TestNewWindowAfterA429WindowStartsFresh(t *testing.T) {
	b := New(true)
	// Given a 429 window that has run out
	require.True(t, b.RecordReply(at(0), 429, "1"))
	require.Equal(t, Forward, b.Decide(at(1000)))
	// When a 503 opens the next window
	require.True(t, b.RecordReply(at(1000), 503, "5"))
	// Then that window is a plain 503 window, and can be probed
	assert.False(t, b.Is429Window())
	assert.Equal(t, Probe, b.Decide(at(2000)))
	assert.Equal(t, 2, b.Opens())
}

func TestProbeTiming(t *testing.T) {
	b := New(true)
	// Given a 503 window opened at 0
	require.True(t, b.RecordReply(at(0), 503, "10"))
	// Then the first probe is due exactly 1 s after the window opened, not before
	assert.Equal(t, Shed, b.Decide(at(999)))
	assert.Equal(t, Probe, b.Decide(at(1000)))
	// And when that probe answers "not ready", the next is due 1 s after it started
	b.RecordProbe(at(1300), 503)
	assert.Equal(t, Shed, b.Decide(at(1999)))
	assert.Equal(t, Probe, b.Decide(at(2000)))
}

func TestProbeIntervalCountsFromOpeningNotFromExtension(t *testing.T) {
	b := New(true)
	require.True(t, b.RecordReply(at(0), 503, "5"))
	// An extension at 0.8 s does not push the first probe back
	require.False(t, b.RecordReply(at(800), 503, "5"))
	assert.Equal(t, Probe, b.Decide(at(1000)))
}

func TestProbeInFlightBlocksASecondProbe(t *testing.T) {
	b := New(true)
	require.True(t, b.RecordReply(at(0), 503, "10"))
	// Given a probe started at 1 s and not yet answered
	require.Equal(t, Probe, b.Decide(at(1000)))
	// Then concurrent callers are shed, even once the interval has passed
	assert.Equal(t, Shed, b.Decide(at(1001)))
	assert.Equal(t, Shed, b.Decide(at(2500)))
	// When the probe times out (status 0) at 3 s
	b.RecordProbe(at(3000), 0)
	// Then the window is still open and the next call may probe again
	assert.True(t, b.Open(at(3000)))
	assert.Equal(t, Probe, b.Decide(at(3000)))
}

func TestProbe2xxClosesAtOnce(t *testing.T) {
	for _, status := range []int{200, 204, 299} {
		b := New(true)
		require.True(t, b.RecordReply(at(0), 503, "10"))
		require.Equal(t, Probe, b.Decide(at(1000)))
		// When the probe answers 2xx
		assert.True(t, b.RecordProbe(at(1100), status), "status %d", status)
		// Then the breaker closes on the spot, long before the window would have ended
		assert.False(t, b.Open(at(1100)), "status %d", status)
		assert.Equal(t, Forward, b.Decide(at(1100)), "status %d", status)
		// And the next overloaded reply opens a new window
		assert.True(t, b.RecordReply(at(1200), 503, "10"), "status %d", status)
		assert.Equal(t, 2, b.Opens(), "status %d", status)
	}
}

func TestProbeOtherAnswersLeaveWindowOpen(t *testing.T) {
	for _, status := range []int{0, 199, 300, 302, 404, 500, 503} {
		b := New(true)
		require.True(t, b.RecordReply(at(0), 503, "10"))
		require.Equal(t, Probe, b.Decide(at(1000)))
		assert.False(t, b.RecordProbe(at(1100), status), "status %d", status)
		assert.True(t, b.Open(at(1100)), "status %d", status)
		assert.False(t, b.Is429Window(), "status %d", status)
		assert.Equal(t, Shed, b.Decide(at(1100)), "status %d", status)
		assert.Equal(t, Probe, b.Decide(at(2000)), "status %d", status)
	}
}

func TestProbeAnswering429MakesA429Window(t *testing.T) {
	b := New(true)
	require.True(t, b.RecordReply(at(0), 503, "10"))
	require.Equal(t, Probe, b.Decide(at(1000)))
	// When the health route answers 429
	b.RecordProbe(at(1100), 429)
	// Then the window is a 429 window: no more probes, waited out to the end
	assert.True(t, b.Is429Window())
	for ms := 1100; ms < 10000; ms += 100 {
		require.Equal(t, Shed, b.Decide(at(ms)), "at %d ms", ms)
	}
	assert.Equal(t, Forward, b.Decide(at(10000)))
}

func TestNoHealthCheckNeverProbes(t *testing.T) {
	b := New(false)
	require.True(t, b.RecordReply(at(0), 503, "10"))
	for ms := 0; ms < 10000; ms += 100 {
		require.Equal(t, Shed, b.Decide(at(ms)), "at %d ms", ms)
	}
	assert.Equal(t, Forward, b.Decide(at(10000)))
}

func TestRecordProbeWithoutAProbeIsIgnored(t *testing.T) {
	b := New(true)
	require.True(t, b.RecordReply(at(0), 503, "10"))
	// A probe answer nobody asked for must not close the window
	b.RecordProbe(at(500), 200)
	assert.True(t, b.Open(at(500)))
	assert.Equal(t, Shed, b.Decide(at(500)))
}

func TestProbeInFlightAtExpiryDoesNotWedge(t *testing.T) {
	b := New(true)
	// Given a 2 s window whose probe, started at 1 s, is still out when the window ends
	require.True(t, b.RecordReply(at(0), 503, "2"))
	require.Equal(t, Probe, b.Decide(at(1000)))
	// Then calls are forwarded once the window ends
	assert.Equal(t, Forward, b.Decide(at(2000)))
	// When a forwarded call opens a new window at 2 s
	require.True(t, b.RecordReply(at(2000), 503, "5"))
	// And the old probe's answer comes back late
	b.RecordProbe(at(2500), 200)
	// Then that stale answer neither closes the new window nor blocks its own probe
	assert.True(t, b.Open(at(2500)))
	assert.Equal(t, Shed, b.Decide(at(2999)))
	assert.Equal(t, Probe, b.Decide(at(3000)))
}

func TestLateProbe429AfterExpiryDoesNotTaintNextWindow(t *testing.T) {
	b := New(true)
	require.True(t, b.RecordReply(at(0), 503, "2"))
	require.Equal(t, Probe, b.Decide(at(1000)))
	// When the probe answers 429 after its window has already ended
	b.RecordProbe(at(2500), 429)
	// Then the breaker is closed, the ended window stays a 503 window, and so does the next one
	assert.Equal(t, Forward, b.Decide(at(2500)))
	assert.False(t, b.Is429Window())
	require.True(t, b.RecordReply(at(2600), 503, "5"))
	assert.False(t, b.Is429Window())
	assert.Equal(t, Probe, b.Decide(at(3600)))
}

func TestRetryAfterRoundsUpToWholeSeconds(t *testing.T) {
	b := New(false)
	require.True(t, b.RecordReply(at(0), 503, "5"))
	cases := []struct {
		ms   int
		want int
	}{
		{0, 5},
		{1, 5},    // 4.999 s left
		{999, 5},  // 4.001 s left
		{1000, 4}, // exactly 4 s left
		{3500, 2}, // 1.5 s left
		{4000, 1},
		{4999, 1}, // 1 ms left
		{5000, 1}, // closed: never advertise 0
		{9000, 1},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, b.RetryAfter(at(c.ms)), "at %d ms", c.ms)
	}
}

func TestRetryAfterFollowsExtension(t *testing.T) {
	b := New(false)
	require.True(t, b.RecordReply(at(0), 503, "2"))
	require.False(t, b.RecordReply(at(1500), 429, "30"))
	assert.Equal(t, 30, b.RetryAfter(at(1500)))
	assert.Equal(t, 29, b.RetryAfter(at(2500)))
}

func TestOpensCountsWindowsNotReplies(t *testing.T) {
	b := New(true)
	b.RecordReply(at(0), 503, "2")    // opens #1
	b.RecordReply(at(500), 503, "2")  // extends
	b.RecordReply(at(600), 429, "")   // extends
	b.RecordReply(at(2600), 503, "0") // zero-length: nothing
	b.RecordReply(at(2700), 500, "5") // not an overload
	require.Equal(t, 1, b.Opens())
	b.RecordReply(at(3000), 429, "1") // opens #2
	b.RecordReply(at(4000), 503, "5") // opens #3, the 429 window having ended
	require.Equal(t, Probe, b.Decide(at(5000)))
	b.RecordProbe(at(5000), 200)
	b.RecordReply(at(5100), 503, "") // opens #4 after the probe closed #3
	assert.Equal(t, 4, b.Opens())
}

func TestBreakersAreIndependent(t *testing.T) {
	one, other := New(true), New(true)
	require.True(t, one.RecordReply(at(0), 429, "10"))
	assert.Equal(t, Shed, one.Decide(at(100)))
	assert.Equal(t, Forward, other.Decide(at(100)))
	assert.Zero(t, other.Opens())
	assert.False(t, other.Is429Window())
}

func TestProbe2xxDoesNotCloseAWindowA429ReachedMeanwhile(t *testing.T) {
	b := New(true)
	require.True(t, b.RecordReply(at(0), 503, "10"))
	require.Equal(t, Probe, b.Decide(at(1000)))
	// When a call forwarded before the window opened answers 429 while the probe is out
	assert.False(t, b.RecordReply(at(1050), 429, "3"))
	// Then the probe's 2xx does not close the window: it is a 429 window now, waited out
	assert.False(t, b.RecordProbe(at(1100), 200))
	assert.True(t, b.Open(at(1100)))
	assert.True(t, b.Is429Window())
	for ms := 1100; ms < 10000; ms += 100 {
		require.Equal(t, Shed, b.Decide(at(ms)), "at %d ms", ms)
	}
	assert.Equal(t, Forward, b.Decide(at(10000)))
}

func TestOpenedAtIsTheWindowsStart(t *testing.T) {
	b := New(true)
	require.True(t, b.RecordReply(at(100), 503, "5"))
	assert.Equal(t, at(100), b.OpenedAt())
	b.RecordReply(at(200), 503, "9") // extends the window: it still opened at 100
	assert.Equal(t, at(100), b.OpenedAt())
}
