package server_test

import (
	"context"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestMCPMetaCriticality: an MCP tool call's _meta "plimsoll/criticality" is the run's tier at
// the API limit. A critical /v1 run holds the only slot; a sheddable MCP call's API call is shed
// and counted as sheddable; a value that is not a tier is refused by name.
func TestMCPMetaCriticality(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, withLimitedProfile(up))
	var wg sync.WaitGroup
	wg.Go(func() {
		d.do("POST", "/v1/runs", tokenB, run("limited", statusTool), "Plimsoll-Criticality", "critical")
	})
	up.waitArrived(t, 1)

	cs, _ := connectMCP(t, d, tokenB, "meta-test")
	params := &mcp.CallToolParams{Name: "run_limited", Arguments: map[string]any{"code": statusTool},
		Meta: mcp.Meta{"plimsoll/criticality": "sheddable"}}
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.JSONEq(t, `[503,"1"]`, string(structured(t, res).Output))

	_, b := d.send(d.admin, "GET", "/admin/limits?profile=limited", "", nil)
	lim := decode[limitsAnswer](t, b)
	require.Equal(t, uint64(1), lim.Limits[0].Shed["sheddable"], "%s", b)

	params.Meta = mcp.Meta{"plimsoll/criticality": "urgent"}
	res, err = cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, text(res), `_meta plimsoll/criticality: unknown criticality: "urgent" is not critical, normal or sheddable`)
	up.open()
	wg.Wait()
}
