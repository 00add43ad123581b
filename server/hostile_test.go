package server_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/internal/clienttext"
	"github.com/plimsoll/plimsoll/server"
)

// The attacker suite of issue 20: each test starts the real daemon on loopback and plays a
// hostile client.

// sendAs sends a request with a Host (and an Origin when given) of the caller's choosing.
func sendAs(t *testing.T, base, method, path, host, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(`{"profile":"petstore","code":"return 1"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Host = host
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b)
}

// A web page that rebinds its own name to 127.0.0.1 reaches an open daemon with its name in
// Host (and its origin in Origin); every listener refuses it, naming the Host.
func TestOpenModeRefusesRebindingHosts(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.ClientsFile = "" })
	routes := []struct{ base, method, path string }{
		{d.api, "POST", "/v1/runs"}, {d.api, "GET", "/v1/profiles"}, {d.api, "POST", "/mcp"},
		{d.api, "GET", "/metrics"}, {d.admin, "GET", "/admin/state"}, {d.admin, "POST", "/admin/reload"},
	}
	for _, rt := range routes {
		code, body := sendAs(t, rt.base, rt.method, rt.path, "rebind.attacker.example:7070", "")
		assert.Equal(t, http.StatusForbidden, code, "%s %s: %s", rt.method, rt.path, body)
		assert.Contains(t, body, `Host \"rebind.attacker.example:7070\"`, "%s %s", rt.method, rt.path)

		code, body = sendAs(t, rt.base, rt.method, rt.path, "127.0.0.1", "http://rebind.attacker.example")
		assert.Equal(t, http.StatusForbidden, code, "%s %s with a foreign Origin: %s", rt.method, rt.path, body)
		assert.Contains(t, body, "Origin", "%s %s", rt.method, rt.path)
	}
	// Loopback names still work, with or without a loopback Origin.
	for _, host := range []string{"localhost:7070", "127.0.0.1", "[::1]:7070", "LOCALHOST"} {
		code, body := sendAs(t, d.api, "GET", "/v1/profiles", host, "http://localhost:3000")
		assert.Equal(t, http.StatusOK, code, "Host %s: %s", host, body)
	}
	resp, _ := d.do("POST", "/v1/runs", "", run("petstore", "return 1"))
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// With tokens the API serves any Host (a proxy may pass its own), but a tokenless admin plane
// still takes loopback names only.
func TestTokenlessAdminRefusesRebindingHosts(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	code, body := sendAs(t, d.admin, "GET", "/admin/state", "rebind.attacker.example", "")
	assert.Equal(t, http.StatusForbidden, code, body)
	assert.Contains(t, body, "rebind.attacker.example")
	req, _ := http.NewRequest("GET", d.api+"/v1/profiles", nil)
	req.Host = "plimsoll.internal.example"
	req.Header.Set("Authorization", "Bearer "+tokenA)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// A client that names itself with 2 MB is refused at initialize; one that names itself with
// 40 KB of line breaks and escapes is served, and its name reaches the audit line cut to 128
// bytes and escaped. A guest's megabyte error leaves an audit line of at most 8 KiB.
func TestClientTextIsBoundedOnAuditLines(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	init := func(name string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":%q,"version":"1"}}}`, name)
	}
	resp, body := d.do("POST", "/mcp", tokenA, init(strings.Repeat("A", 2<<20)), "Accept", "application/json, text/event-stream")
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%.300s", body)
	assert.Contains(t, string(body), "64KiB")

	name := strings.Repeat("evil\n{\"forged\":1}\x1b[2J\u202e", 2000)
	cs, _ := connectMCP(t, d, tokenA, name)
	_, out := callTool(t, cs, "run_petstore", `return 1`, nil)
	_, dead := d.do("POST", "/v1/runs", tokenA, run("petstore", `throw new Error("<&>".repeat(200000))`))
	deadRun := decode[answer](t, dead)

	raw, err := os.ReadFile(d.auditFile)
	require.NoError(t, err)
	for _, l := range strings.SplitAfter(string(raw), "\n") {
		assert.LessOrEqual(t, len(l), broker.MaxAuditLine, "an audit line of %d bytes", len(l))
	}
	lines := auditOf(t, d, out.RunID)
	require.Len(t, lines, 1)
	got := lines[0]["mcp_client"].(string)
	assert.LessOrEqual(t, len(got), clienttext.MaxName)
	assert.True(t, strings.HasPrefix(got, `evil\u{000A}{"forged":1}\u{001B}[2J\u{202E}evil`), got)
	assert.NotContains(t, got, "\n")
	lines = auditOf(t, d, deadRun.RunID)
	require.Len(t, lines, 1)
	assert.Equal(t, "error", lines[0]["status"])
	assert.Contains(t, lines[0]["error"], "<&><&>")
	assert.Contains(t, lines[0]["error"], "…[cut]")
}

// One client opening sessions in a loop holds at most MCPSessionsPerClient; the next initialize
// gets a clear 429, another client still gets in, and a closed session frees its place.
func TestMCPSessionFloodIsCapped(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	initialize := func() (*http.Response, []byte) {
		return d.do("POST", "/mcp", tokenA, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`,
			"Accept", "application/json, text/event-stream")
	}
	var ids []string
	for range server.MCPSessionsPerClient {
		resp, body := initialize()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		ids = append(ids, resp.Header.Get("Mcp-Session-Id"))
	}
	resp, body := initialize()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), fmt.Sprintf("client agent-a has %d MCP sessions open", server.MCPSessionsPerClient))
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))

	other, _ := connectMCP(t, d, tokenB, "bystander")
	_, out := callTool(t, other, "run_petstore", `return 2`, nil)
	assert.Equal(t, "ok", string(out.Status))

	resp, _ = d.do("DELETE", "/mcp", tokenA, nil, "Mcp-Session-Id", ids[0])
	require.Less(t, resp.StatusCode, 300)
	eventually(t, func() bool { resp, _ := initialize(); return resp.StatusCode == http.StatusOK }, "an initialize once a session closed")
}

// A stranger reading /metrics on the API listener learns no profile name or route (a forbidden
// and an unknown profile stay indistinguishable); the admin listener has the per-profile series.
func TestMetricsOnTheAPIListenerNameNoProfile(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	resp, b := d.do("POST", "/v1/runs", tokenB, run("inventory", `await api.get("/pets/1"); return 1`))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	resp, m := d.do("GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, secret := range []string{"inventory", "petstore", "GET /pets/*", `profile="`} {
		assert.NotContains(t, string(m), secret)
	}
	assert.Contains(t, string(m), "plimsoll_queue_depth")
	_, m = d.adm("GET", "/metrics", "", nil)
	assert.Contains(t, string(m), `plimsoll_runs_total{profile="inventory",status="ok"} 1`)
}

// A run refused at admission leaves the same record whether it came over /v1 or MCP: no audit
// line (no run exists; a flood of refusals costs no disk write) and one count in
// plimsoll_refusals_total.
func TestRefusalsAreAccountedAlikeOnEveryPath(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.MaxRuns, c.Queue = 1, -1 })
	held := make(chan int, 1)
	go func() { held <- d.status("POST", "/v1/runs", tokenA, run("petstore", blockTool)) }()
	up.waitArrived(t, 1)

	assert.Equal(t, http.StatusTooManyRequests, d.status("POST", "/v1/runs", tokenA, run("petstore", "return 1")))
	cs, _ := connectMCP(t, d, tokenA, "agent-a-mcp")
	res, out := callTool(t, cs, "run_petstore", "return 1", nil)
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "busy")
	assert.Empty(t, out.RunID)

	_, m := d.do("GET", "/metrics", "", nil)
	for _, want := range []string{`plimsoll_refusals_total{reason="busy",surface="mcp"} 1`, `plimsoll_refusals_total{reason="busy",surface="v1"} 1`} {
		assert.Contains(t, string(m), want+"\n")
	}
	up.open()
	assert.Equal(t, http.StatusOK, <-held)
	lines := auditLines(t, d.auditFile)
	require.Len(t, lines, 1, "only the run that ran is audited")
	assert.Equal(t, "ok", lines[0]["status"])
}

// One client running in a loop evicts its own recent runs, not another client's; an answer
// over the ring's bounds is kept cut, and says so.
func TestRecentRingFloodFromOneClient(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.RecentRuns = 8 })
	var mine []string
	for i := range 2 {
		_, b := d.do("POST", "/v1/runs", tokenB, run("petstore", fmt.Sprintf("return %d", i)))
		mine = append(mine, decode[answer](t, b).RunID)
	}
	var flood []string
	for i := range 3 * 8 {
		_, b := d.do("POST", "/v1/runs", tokenA, run("petstore", fmt.Sprintf("return %d", i)))
		flood = append(flood, decode[answer](t, b).RunID)
	}
	for _, id := range mine {
		assert.Equal(t, http.StatusOK, d.status("GET", "/v1/runs/"+id, tokenB, nil), "agent-b's run %s was evicted by agent-a's flood", id)
	}
	assert.Equal(t, http.StatusNotFound, d.status("GET", "/v1/runs/"+flood[0], tokenA, nil))
	assert.Equal(t, http.StatusOK, d.status("GET", "/v1/runs/"+flood[len(flood)-1], tokenA, nil))

	_, b := d.do("POST", "/v1/runs", tokenA, run("petstore", `console.log("x".repeat(200000)); return "y".repeat(1000000)`))
	big := decode[answer](t, b)
	assert.Len(t, big.Output, 1000002, "the answer itself is whole")
	_, b = d.do("GET", "/v1/runs/"+big.RunID, tokenA, nil)
	kept := decode[struct {
		answer
		Truncated []string `json:"truncated"`
	}](t, b)
	assert.Equal(t, []string{"output", "log"}, kept.Truncated)
	assert.Len(t, decode[string](t, kept.Output), server.RecentOutputBytes, "the output's first bytes, as a string")
	assert.Len(t, kept.Log, server.RecentLogBytes)
}
