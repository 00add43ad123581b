package host

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

func clockProfile(runTimeout, wallCap time.Duration) *profiles.Profile {
	return &profiles.Profile{Limits: profiles.Limits{RunTimeout: runTimeout},
		Approvals: &profiles.Approvals{WallClockCap: wallCap}}
}

func timeoutLimit(ctx context.Context) string {
	var te *TimeoutError
	if errors.As(context.Cause(ctx), &te) {
		return te.Limit
	}
	return ""
}

func TestActiveClockCountsOnlyActiveTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := clockProfile(time.Second, time.Minute)
		c := newActiveClock(p)
		ctx, stop := c.deadline(context.Background(), p)
		defer stop()
		time.Sleep(600 * time.Millisecond)
		c.pause()
		c.pause() // two calls wait at once
		time.Sleep(10 * time.Second)
		c.resume()
		time.Sleep(10 * time.Second)
		require.NoError(t, ctx.Err(), "one call still waits: the clock stays stopped")
		c.resume()
		time.Sleep(399 * time.Millisecond)
		require.NoError(t, ctx.Err(), "600 ms + 399 ms of active time")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Error(t, ctx.Err())
		assert.Equal(t, "limits.run_timeout", timeoutLimit(ctx))
	})
}

func TestActiveClockWallClockCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := clockProfile(time.Second, 30*time.Second)
		c := newActiveClock(p)
		ctx, stop := c.deadline(context.Background(), p)
		defer stop()
		c.pause()
		time.Sleep(30*time.Second - time.Nanosecond)
		require.NoError(t, ctx.Err())
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, "approvals.wall_clock_cap", timeoutLimit(ctx))
	})
}

func TestNoApprovalsNoActiveClock(t *testing.T) {
	assert.Nil(t, newActiveClock(&profiles.Profile{}))
	var a broker.Approver
	assert.Nil(t, (*activeClock)(nil).wrap(a), "a run without approvals keeps its approver as given")
}

type slowPerson struct{ after time.Duration }

func (s slowPerson) Approve(ctx context.Context, q broker.ApprovalRequest) broker.ApprovalAnswer {
	select {
	case <-time.After(s.after):
		return broker.ApprovalAnswer{Decision: broker.ApprovalGranted, Channel: "test"}
	case <-ctx.Done():
		return broker.ApprovalAnswer{}
	}
}

// A real JS run whose payment waits 20 s for a person, under a 2 s run_timeout: the wait does not
// count, so the run ends ok; the same run under a 10 s wall-clock cap times out on the cap.
func TestRunTimeoutCountsActiveTime(t *testing.T) {
	for _, tc := range []struct {
		name, cap, status, limit string
	}{
		{"active time only", "", "ok", ""},
		{"wall clock cap", "  wall_clock_cap: 10s\n", "timeout", "approvals.wall_clock_cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				upstream := roundTrip(func(r *http.Request) (*http.Response, error) {
					return &http.Response{StatusCode: 201, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}"))}, nil
				})
				rt := newRuntime(t, Options{Transport: upstream})
				p := profile(t, "http://api.test", "  - POST /pay\nlimits: {run_timeout: 2s}\napprovals:\n  routes: [POST /pay]\n  timeout: 1m\n"+tc.cap)
				res := rt.RunWith(context.Background(), JSTool("pay.js", `const r = await api.post("/pay", {n: 1}); return r.status;`), p, nil,
					RunOptions{Approver: slowPerson{20 * time.Second}})
				assert.Equal(t, broker.Status(tc.status), res.Audit.Status, "%v", res.Err)
				if tc.limit == "" {
					assert.Equal(t, "201", strings.TrimSpace(string(res.Output)))
					return
				}
				var te *TimeoutError
				require.True(t, errors.As(res.Err, &te), "%v", res.Err)
				assert.Equal(t, tc.limit, te.Limit)
			})
		})
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
