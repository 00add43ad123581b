package server_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/server/mcpserver"
)

// A Python tool over /v1: "language": "python", through the daemon's broker, audited once.
func TestPythonRunOverHTTP(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	resp, b := d.do("POST", "/v1/runs", tokenA, map[string]any{"profile": "petstore", "language": "python",
		"input": map[string]any{"n": 2},
		"code":  "print('hi')\nr = await api.get(f\"/pets/{input['n']}\")\nreturn {'got': r.json()['path']}"})
	require.Equal(t, 200, resp.StatusCode, "%s", b)
	a := decode[answer](t, b)
	assert.Equal(t, "ok", a.Status, "%s", b)
	assert.JSONEq(t, `{"got":"/api/pets/2"}`, string(a.Output))
	assert.Equal(t, "hi\n", a.Log)
	assert.Len(t, a.Trace, 1)
	assert.True(t, strings.HasSuffix(a.Audit["tool"].(string), ".py"), "the tool is named as Python: %v", a.Audit["tool"])
	require.Len(t, auditOf(t, d, a.RunID), 1, "one audit line")
	noSecret(t, "answer", string(b))

	// A Python error is a 200 with its traceback's last line as the error.
	resp, b = d.do("POST", "/v1/runs", tokenA, map[string]any{"profile": "petstore", "language": "python", "code": "x = 1\nreturn x / 0"})
	a = decode[answer](t, b)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "error", a.Status)
	assert.Contains(t, a.Error, "ZeroDivisionError")
	assert.Contains(t, a.Log, `line 2, in <tool>`)

	for _, r := range []struct {
		name string
		body map[string]any
	}{
		{"unknown language", map[string]any{"profile": "petstore", "language": "ruby", "code": "1"}},
		{"language with a module", map[string]any{"profile": "petstore", "language": "python", "wasm_base64": "AA=="}},
		{"language not a string", map[string]any{"profile": "petstore", "language": 3, "code": "1"}},
	} {
		resp, b := d.do("POST", "/v1/runs", tokenA, r.body)
		e := decode[struct{ Error, Field string }](t, b)
		assert.Equal(t, 400, resp.StatusCode, "%s: %s", r.name, b)
		assert.Equal(t, "language", e.Field, "%s: %s", r.name, b)
	}
}

// The MCP tool of a profile runs Python when asked, and says so in its description and schema.
func TestPythonOverMCP(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	a, _ := connectMCP(t, d, tokenA, "agent-a-mcp")

	tool := toolNames(t, a)["run_petstore"]
	require.NotNil(t, tool)
	assert.Contains(t, tool.Description, `language:"python"`)
	schema, _ := tool.InputSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	assert.Contains(t, props, "language")

	res, err := a.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_petstore", Arguments: map[string]any{
		"language": "python", "input": map[string]any{"id": 7},
		"code": "import asyncio\nrs = await asyncio.gather(api.get(f\"/pets/{input['id']}\"), api.get('/pets/8'))\nreturn [r.json()['path'] for r in rs]"}})
	require.NoError(t, err)
	require.False(t, res.IsError, text(res))
	out := structured(t, res)
	assert.JSONEq(t, `["/api/pets/7", "/api/pets/8"]`, string(out.Output))
	assert.Equal(t, mcpserver.Calls{Forwarded: 2}, out.Calls)
	require.Len(t, auditOf(t, d, out.RunID), 1)

	res, err = a.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_petstore", Arguments: map[string]any{"language": "cobol", "code": "1"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "language")
	assert.Contains(t, text(res), "cobol")
}
