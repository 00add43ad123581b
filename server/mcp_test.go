package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/server"
	"github.com/plimsoll/plimsoll/server/mcpserver"
)

// bearer adds a client's token to every request of the MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// progressLog keeps the progress notifications a client received.
type progressLog struct {
	mu   sync.Mutex
	msgs []*mcp.ProgressNotificationParams
}

func (p *progressLog) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, req.Params)
}

func (p *progressLog) all() []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.msgs)
}

// connectMCP opens an MCP session on the daemon's /mcp as client name with token.
func connectMCP(t *testing.T, d *daemon, token, name string) (*mcp.ClientSession, *progressLog) {
	t.Helper()
	pl := &progressLog{}
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, &mcp.ClientOptions{ProgressNotificationHandler: pl.handle})
	tr := &mcp.StreamableClientTransport{Endpoint: d.api + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}
	cs, err := c.Connect(context.Background(), tr, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs, pl
}

func callTool(t *testing.T, cs *mcp.ClientSession, tool, code string, input any) (*mcp.CallToolResult, mcpserver.Result) {
	t.Helper()
	args := map[string]any{"code": code}
	if input != nil {
		args["input"] = input
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	return res, structured(t, res)
}

func structured(t *testing.T, res *mcp.CallToolResult) mcpserver.Result {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out mcpserver.Result
	require.NoError(t, json.Unmarshal(b, &out), "%s", b)
	return out
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func toolNames(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	lr, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	out := map[string]*mcp.Tool{}
	for _, tl := range lr.Tools {
		out[tl.Name] = tl
	}
	return out
}

func auditOf(t *testing.T, d *daemon, runID string) []map[string]any {
	var out []map[string]any
	for _, l := range auditLines(t, d.auditFile) {
		if l["run_id"] == runID {
			out = append(out, l)
		}
	}
	return out
}

func TestMCPHTTPToolsAreTheClientsOwn(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	a, _ := connectMCP(t, d, tokenA, "agent-a-mcp")
	b, _ := connectMCP(t, d, tokenB, "agent-b-mcp")

	toolsA := toolNames(t, a)
	require.Len(t, toolsA, 1, "agent-a may use petstore only")
	pet := toolsA["run_petstore"]
	require.NotNil(t, pet)
	assert.True(t, strings.HasPrefix(pet.Description, mcpserver.Convention), pet.Description)
	assert.Contains(t, pet.Description, "the pet store", "the inline description")
	assert.Contains(t, pet.Description, "GET /pets/*", "the route list, without a description file")
	schema, _ := json.Marshal(pet.InputSchema)
	assert.JSONEq(t, `{"type":"object","required":["code"],"properties":{"code":{"type":"string"},"language":{"type":"string","enum":["javascript","python"]},"input":{"description":"any JSON"},"timeout":{"type":"string","description":"optional run deadline such as 5s; the profile's run_timeout caps it"}}}`, string(schema))

	assert.ElementsMatch(t, []string{"run_inventory", "run_petstore"}, keys(toolNames(t, b)))

	// agent-a cannot call what it cannot see: the tool is unknown to it, as any other.
	_, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_inventory", Arguments: map[string]any{"code": "return 1"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown tool "run_inventory"`)
	assert.Empty(t, auditLines(t, d.auditFile), "no run happened")

	// No token, or a wrong one, is the /v1 answer: 401.
	for _, tok := range []string{"", "not-a-client-token-at-all"} {
		c := mcp.NewClient(&mcp.Implementation{Name: "intruder"}, nil)
		_, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: d.api + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{tok}}}, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Unauthorized")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestMCPHTTPCallAuditedAsTheClient(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	a, pl := connectMCP(t, d, tokenA, "agent-a-mcp")

	res, out := callTool(t, a, "run_petstore", `console.log("fetching", input.id); const r = await api.get("/pets/" + input.id); return r.json();`, map[string]any{"id": 42})
	require.False(t, res.IsError, text(res))
	assert.JSONEq(t, `{"path":"/api/pets/42"}`, string(out.Output))
	require.Len(t, res.Content, 2, "the output as JSON, then the log tail")
	assert.JSONEq(t, `{"path":"/api/pets/42"}`, res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, "log tail:\nfetching 42\n", res.Content[1].(*mcp.TextContent).Text)
	assert.Equal(t, "ok", string(out.Status))
	assert.Equal(t, mcpserver.Calls{Forwarded: 1}, out.Calls)
	assert.Equal(t, "fetching 42\n", out.Log)
	assert.Empty(t, pl.all(), "no progress token, no progress")

	lines := auditOf(t, d, out.RunID)
	require.Len(t, lines, 1)
	assert.Equal(t, "agent-a", lines[0]["client"])
	assert.Equal(t, "agent-a-mcp", lines[0]["mcp_client"])
	assert.Equal(t, "ok", lines[0]["status"])
	assert.Equal(t, "petstore", lines[0]["profile"])

	// The run is a recent run of agent-a's, with its trace, as a /v1 run is.
	resp, body := d.do("GET", "/v1/runs/"+out.RunID, tokenA, nil)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"route":"GET /pets/*"`)
	noSecret(t, "the MCP result", text(res)+string(out.Output)+out.Log)
}

func TestMCPHTTPFailuresAreToolResults(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	a, _ := connectMCP(t, d, tokenA, "agent-a-mcp")

	res, out := callTool(t, a, "run_petstore", "console.log('before');\nfunction deep() { throw new Error('boom') }\ndeep();", nil)
	require.True(t, res.IsError)
	assert.Equal(t, "error", string(out.Status))
	assert.Contains(t, text(res), "boom")
	assert.Contains(t, text(res), "deep", "the JS stack")
	assert.Contains(t, text(res), "log tail:\nbefore\n", "the log's tail")
	assert.Equal(t, 1, strings.Count(text(res), "boom"), "the stack once, not again in the log's tail")
	require.Len(t, auditOf(t, d, out.RunID), 1)

	// A route the profile does not grant is the broker's answer inside the run, not a failure.
	res, out = callTool(t, a, "run_petstore", `const r = await api.post("/pets", {name: "x"}); return [r.status, r.outcome];`, nil)
	require.False(t, res.IsError, text(res))
	assert.JSONEq(t, `[403, "denied"]`, string(out.Output))
	assert.Equal(t, mcpserver.Calls{Denied: 1}, out.Calls)
	assert.Equal(t, 0, int(up.arrived.Load()))

	// A missing code is refused by the input schema, as a tool error.
	r, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_petstore", Arguments: map[string]any{"input": 1}})
	require.NoError(t, err)
	assert.True(t, r.IsError)
	assert.Contains(t, text(r), "code")
}

func TestMCPHTTPProgressAndCancel(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	a, pl := connectMCP(t, d, tokenA, "agent-a-mcp")

	params := &mcp.CallToolParams{Name: "run_petstore", Arguments: map[string]any{"code": `for (const id of [1, 2, 3]) await api.get("/pets/" + id); return "done";`}}
	params.SetProgressToken("tok-1")
	res, err := a.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.False(t, res.IsError, text(res))
	eventually(t, func() bool { return len(pl.all()) > 0 }, "a progress notification")
	first := pl.all()[0]
	assert.Equal(t, "tok-1", first.ProgressToken)
	assert.Equal(t, "GET /pets/1 forwarded 200", first.Message, "the first call is reported at once")
	assert.Equal(t, float64(1), first.Progress)
	for i, p := range pl.all()[1:] {
		assert.Greater(t, p.Progress, pl.all()[i].Progress, "progress only grows")
	}

	// Cancel a call held upstream: the run ends, with one audit line.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "run_petstore", Arguments: map[string]any{"code": blockTool}})
		errc <- err
	}()
	up.waitArrived(t, 1)
	cancel()
	require.Error(t, <-errc)
	var line map[string]any
	eventually(t, func() bool {
		for _, l := range auditLines(t, d.auditFile) {
			if l["tool"] != nil && l["status"] != "ok" {
				line = l
				return true
			}
		}
		return false
	}, "the cancelled run's audit line")
	assert.Contains(t, []any{"error", "timeout"}, line["status"])
	assert.Equal(t, "agent-a-mcp", line["mcp_client"])
	assert.Len(t, auditOf(t, d, line["run_id"].(string)), 1)
}

func TestMCPHTTPGoesThroughAdmission(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.MaxRuns, c.Queue = 1, -1 })
	a, _ := connectMCP(t, d, tokenA, "agent-a-mcp")
	held := make(chan *mcp.CallToolResult, 1)
	go func() {
		r, _ := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_petstore", Arguments: map[string]any{"code": blockTool}})
		held <- r
	}()
	up.waitArrived(t, 1)
	// The one slot is taken and there is no queue: the next call is shed, as a /v1 run would be.
	res, out := callTool(t, a, "run_petstore", "return 1", nil)
	require.True(t, res.IsError)
	assert.Contains(t, text(res), "busy")
	assert.Equal(t, 429, d.status("POST", "/v1/runs", tokenA, run("petstore", "return 1")))
	assert.Empty(t, out.RunID, "a shed call is not a run (server/refusal.go)")
	assert.Contains(t, text(res), "refused: ")
	up.open()
	r := <-held
	require.NotNil(t, r)
	assert.False(t, r.IsError, text(r))
}

func TestMCPHTTPToolsFollowTheProfileDirectory(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	b, _ := connectMCP(t, d, tokenB, "agent-b-mcp")
	assert.ElementsMatch(t, []string{"run_inventory", "run_petstore"}, keys(toolNames(t, b)))

	writeProfile(t, d.dir, "orders.v2", up.URL, "")
	eventually(t, func() bool { _, ok := toolNames(t, b)["run_orders_v2"]; return ok }, "the new profile's tool")
	res, out := callTool(t, b, "run_orders_v2", `return (await api.get("/pets/9")).json();`, nil)
	require.False(t, res.IsError, text(res))
	assert.JSONEq(t, `{"path":"/api/pets/9"}`, string(out.Output))

	require.NoError(t, os.Remove(filepath.Join(d.dir, "orders.v2.yaml")))
	eventually(t, func() bool { _, ok := toolNames(t, b)["run_orders_v2"]; return !ok }, "the removed profile's tool gone")

	// A drain with a session still open ends it and returns cleanly.
	require.NoError(t, d.shutdown())
	_, err := b.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_petstore", Arguments: map[string]any{"code": "return 1"}})
	require.Error(t, err)
}
