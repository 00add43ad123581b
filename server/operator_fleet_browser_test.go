package server_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/internal/natstest"
)

// The operator page of a replica shows its fleet: every replica's heartbeat, its own marked, and
// the replica degraded once NATS is gone (its last known flags hold).
func TestOperatorPageShowsTheFleet(t *testing.T) {
	ctx := browser(t)
	ns := natstest.Start(t)
	up := newUpstream(t)
	a := start(t, up, inFleet(ns, "a"))
	start(t, up, inFleet(ns, "b"))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(a.admin+"/admin/"),
		chromedp.WaitVisible(chromedp.CSS(`#fleet tr.replica.live.own[data-replica="a"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#fleet tr.replica.live[data-replica="b"]`)),
	), "both replicas listed, this one marked")
	assert.Equal(t, "test · this replica: a", textOf(t, ctx, "#fleet-name"))
	assert.Contains(t, textOf(t, ctx, "#fleet-note"), "connected")
	assert.NotContains(t, textOf(t, ctx, `#fleet tr[data-replica="b"]`), "differs", "both serve the same profile set")

	ns.Shutdown()
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#fleet-note.error"))), "degraded once NATS is gone")
	assert.Contains(t, textOf(t, ctx, "#fleet-note"), "degraded: NATS unreachable")
}
