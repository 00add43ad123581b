package profiles_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/profiles"
)

const approvalsBase = `
base_url: http://127.0.0.1:8080
credential: {env: TOKEN}
routes: [GET /pets, GET /pets/*, POST /payments, DELETE /pets/*]
`

func loadApprovals(t *testing.T, block string) (*profiles.Profile, error) {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "shop.yaml", approvalsBase+block)
	return profiles.Load(dir, "shop")
}

func TestApprovalsBlock(t *testing.T) {
	p, err := loadApprovals(t, `
approvals:
  routes: [POST /payments, DELETE /pets/*]
  timeout: 20s
  max_per_run: 3
  channels: [admin]
  wall_clock_cap: 2m
`)
	require.NoError(t, err)
	a := p.Approvals
	require.NotNil(t, a)
	assert.Equal(t, []string{"POST /payments", "DELETE /pets/*"}, []string{a.Routes[0].String(), a.Routes[1].String()})
	assert.Equal(t, 20*time.Second, a.Timeout)
	assert.Equal(t, 3, a.MaxPerRun)
	assert.Equal(t, []string{"admin"}, a.Channels)
	assert.Equal(t, 2*time.Minute, a.WallClockCap)
	assert.True(t, a.Allows("admin"))
	assert.False(t, a.Allows("elicit"))

	r, ok := a.Gated("DELETE", "/pets/7")
	require.True(t, ok)
	assert.Equal(t, "DELETE /pets/*", r.String())
	_, ok = a.Gated("GET", "/pets/7")
	assert.False(t, ok, "a granted but unmarked route is not gated")
}

func TestApprovalsDefaultsAndAbsence(t *testing.T) {
	p, err := loadApprovals(t, "approvals: {routes: [POST /payments]}\n")
	require.NoError(t, err)
	assert.Equal(t, profiles.DefaultApprovalTimeout, p.Approvals.Timeout)
	assert.Equal(t, profiles.DefaultApprovalsPerRun, p.Approvals.MaxPerRun)
	assert.Equal(t, []string{"elicit", "admin"}, p.Approvals.Channels)
	assert.Equal(t, 30*time.Second+5*50*time.Second, p.Approvals.WallClockCap, "run_timeout + max_per_run × timeout")

	p, err = loadApprovals(t, "")
	require.NoError(t, err)
	assert.Nil(t, p.Approvals)
	_, ok := p.Approvals.Gated("POST", "/payments")
	assert.False(t, ok, "a profile without approvals gates nothing")
}

func TestApprovalsRefusals(t *testing.T) {
	for _, tc := range []struct{ block, field, reason string }{
		{"approvals: [POST /payments]\n", "approvals", "must be a mapping"},
		{"approvals: {routes: []}\n", "approvals.routes", "non-empty list"},
		{"approvals: {routes: [POST /refunds]}\n", "approvals.routes[0]", `"POST /refunds" is not granted under routes`},
		{"approvals: {routes: [DELETE /pets/7]}\n", "approvals.routes[0]", "word for word"},
		{"approvals: {routes: [POST /payments, POST /payments]}\n", "approvals.routes[1]", "listed twice"},
		{"approvals: {routes: [POST /payments], timeout: soon}\n", "approvals.timeout", "not a positive duration"},
		{"approvals: {routes: [POST /payments], timeout: 11m}\n", "approvals.timeout", "over the 10m0s cap"},
		{"approvals: {routes: [POST /payments], max_per_run: 0}\n", "approvals.max_per_run", "from 1 to 100"},
		{"approvals: {routes: [POST /payments], channels: [email]}\n", "approvals.channels[0]", `"email" is not a channel`},
		{"approvals: {routes: [POST /payments], channels: []}\n", "approvals.channels", "non-empty list"},
		{"approvals: {routes: [POST /payments], webhook: x}\n", "approvals.webhook", "unknown field"},
		{"approvals: {routes: [POST /payments], wall_clock_cap: 10s}\n", "approvals.wall_clock_cap", "under limits.run_timeout (30s)"},
	} {
		_, err := loadApprovals(t, tc.block)
		var pe *profiles.Error
		require.True(t, errors.As(err, &pe), "%s: %v", tc.block, err)
		assert.Equal(t, tc.field, pe.Field, tc.block)
		assert.Contains(t, pe.Reason, tc.reason, tc.block)
	}
}
