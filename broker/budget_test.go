package broker_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

func TestBudgetAllowsExactlyNForwardedCalls(t *testing.T) {
	api := newUpstream(t, nil)
	run := newRun(t, writeProfile(t, api.URL, petRoutes+"budget:\n  calls: 3\n"), nil)

	// Refused calls are never charged.
	assert.Equal(t, http.StatusForbidden, get(t, run, "/owners").Status)
	assert.Equal(t, http.StatusBadRequest, get(t, run, "/pets/../x").Status)
	for i := 0; i < 3; i++ {
		g := get(t, run, "/pets")
		require.Equal(t, http.StatusOK, g.Status, "call %d of the budget", i+1)
	}
	for i := 0; i < 4; i++ {
		g := get(t, run, "/pets/1")
		assert.Equal(t, http.StatusTooManyRequests, g.Status)
		assert.Equal(t, []string{"over_budget"}, g.Headers[OutcomeHeaderName])
		own := g.own(t)
		assert.Equal(t, "over_budget", own.Error)
		assert.Equal(t, "budget of 3 forwarded calls is spent", own.Reason)
	}
	assert.Len(t, api.requests(), 3, "nothing past the budget reaches the upstream")
	assert.Equal(t, broker.Counters{HostCalls: 9, Forwarded: 3, OverBudget: 4, Denied: 1, Invalid: 1}, run.Counters())

	last := run.Trace()[8]
	assert.Equal(t, broker.OverBudget, last.Outcome)
	assert.Equal(t, "GET /pets/*", last.Route)
	assert.Equal(t, 429, last.Status)
	assert.Zero(t, last.UpstreamStatus)

	a := run.Finish(broker.StatusOK, nil)
	assert.Equal(t, 3, a.BudgetCalls)
}

func TestBudgetZero(t *testing.T) {
	api := newUpstream(t, nil)
	run := newRun(t, writeProfile(t, api.URL, petRoutes+"budget:\n  calls: 0\n"), nil)
	assert.Equal(t, http.StatusTooManyRequests, get(t, run, "/pets").Status)
	api.untouched(t)
}

func TestBudgetIsPerRun(t *testing.T) {
	api := newUpstream(t, nil)
	p := writeProfile(t, api.URL, petRoutes+"budget:\n  calls: 1\n")
	a, b := newRun(t, p, nil), newRun(t, p, nil)
	assert.Equal(t, http.StatusOK, get(t, a, "/pets").Status)
	assert.Equal(t, http.StatusOK, get(t, b, "/pets").Status)
	assert.Equal(t, http.StatusTooManyRequests, get(t, a, "/pets").Status)
	assert.Len(t, api.requests(), 2)
}

// quotaSpent is a client quota's refusal as the daemon's quota counter gives it.
type quotaSpent struct{ after int }

func (q quotaSpent) Error() string   { return "client ana is over its quota of 2 calls per minute" }
func (q quotaSpent) RetryAfter() int { return q.after }

// TestQuotaRefusesAfterTheBudgetAllows: the client's calls quota is asked for each call the
// budget lets go on; its refusal is the guest's 429 over_budget with the quota named and the
// window's Retry-After, on the trace and counters, and nothing reaches the upstream.
func TestQuotaRefusesAfterTheBudgetAllows(t *testing.T) {
	api := newUpstream(t, nil)
	p := writeProfile(t, api.URL, petRoutes+"budget:\n  calls: 5\n")
	left := 2
	run, err := broker.New(broker.Config{Profile: p, Quota: func() error {
		if left == 0 {
			return quotaSpent{after: 17}
		}
		left--
		return nil
	}})
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, get(t, run, "/owners").Status, "a denied call does not ask the quota")
	require.Equal(t, http.StatusOK, get(t, run, "/pets").Status)
	require.Equal(t, http.StatusOK, get(t, run, "/pets").Status)
	g := get(t, run, "/pets/1")
	assert.Equal(t, http.StatusTooManyRequests, g.Status)
	assert.Equal(t, []string{"17"}, g.Headers["Retry-After"])
	assert.Equal(t, "client ana is over its quota of 2 calls per minute", g.own(t).Reason)
	assert.Len(t, api.requests(), 2, "nothing past the quota reaches the upstream")
	assert.Equal(t, broker.Counters{HostCalls: 4, Forwarded: 2, OverBudget: 1, Denied: 1}, run.Counters())
	last := run.Trace()[3]
	assert.Equal(t, broker.OverBudget, last.Outcome)
	assert.Contains(t, last.Reason, "quota of 2 calls per minute")
	a := run.Finish(broker.StatusOK, nil)
	assert.Equal(t, 1, a.OverBudget, "the audit line counts the refused call")
}
