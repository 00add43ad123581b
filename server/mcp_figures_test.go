package server_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plimsoll/plimsoll/server"
)

// TestMCPFigures measures the MCP tool call's overhead over POST /v1/runs: the same tool (one
// forwarded call to a loopback API) through both, on one daemon, p50 of 1,000 sequential calls
// each. Run: PLIMSOLL_FIGURES=1 go test -run TestMCPFigures -v ./server
func TestMCPFigures(t *testing.T) {
	if os.Getenv("PLIMSOLL_FIGURES") == "" {
		t.Skip("set PLIMSOLL_FIGURES=1")
	}
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.AuditFile, c.AuditOut = "", io.Discard })
	const code = `return (await api.get("/pets/1")).json();`
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	body := `{"profile":"petstore","code":` + jsQuoteJSON(code) + `}`
	v1 := func() {
		req, _ := http.NewRequest("POST", d.api+"/v1/runs", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tokenA)
		resp, err := hc.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("v1 run: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cs, _ := connectMCP(t, d, tokenA, "figures")
	viaMCP := func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_petstore", Arguments: map[string]any{"code": code}})
		if err != nil || res.IsError {
			t.Fatalf("mcp call: %v %v", err, res)
		}
	}
	progress := func() {
		p := &mcp.CallToolParams{Name: "run_petstore", Arguments: map[string]any{"code": code}}
		p.SetProgressToken("t")
		if _, err := cs.CallTool(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	for range 50 {
		v1()
		viaMCP()
	}
	const n = 1000
	pv, pm, pp := p50(n, v1), p50(n, viaMCP), p50(n, progress)
	t.Logf("p50 of %d sequential runs, one forwarded call each: POST /v1/runs %s; MCP tools/call %s (added %s); with a progress token %s (added %s)",
		n, pv, pm, pm-pv, pp, pp-pv)
}

func jsQuoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
