package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/server"
)

// recorder counts what reached the upstream, by method and path.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) wrap(up *upstream) {
	next := up.Config.Handler
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		next.ServeHTTP(w, req)
	})
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// startShop starts a daemon whose petstore profile marks POST /payments for approval.
func startShop(t *testing.T, approvals string) (*daemon, *recorder) {
	t.Helper()
	up := newUpstream(t)
	rec := &recorder{}
	rec.wrap(up)
	d := start(t, up)
	writeProfile(t, d.dir, "petstore", up.URL, "  - POST /payments\nbudget: {calls: 5}\napprovals:\n  routes: [POST /payments]\n"+approvals)
	resp, body := d.send(d.admin, "POST", "/admin/reload", "", nil)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	require.Contains(t, string(body), `"petstore"`, "the reload took the new profile")
	return d, rec
}

const payTool = `const r = await api.post("/payments", {to: "acme", cents: 1200}); return {status: r.status, body: JSON.parse(r.body)};`

var payBody = []byte(`{"to":"acme","cents":1200}`)

// payHeaders are what the JS preamble sends with payTool's JSON body.
var payHeaders = http.Header{"Content-Type": {"application/json"}}

// pending polls the admin plane until n approvals wait.
func pending(t *testing.T, d *daemon, n int) []server.PendingApproval {
	t.Helper()
	var list server.ApprovalsAnswer
	eventually(t, func() bool {
		resp, body := d.send(d.admin, "GET", "/admin/approvals", "", nil)
		require.Equal(t, 200, resp.StatusCode)
		list = decode[server.ApprovalsAnswer](t, body)
		return len(list.Approvals) >= n
	}, "%d pending approvals", n)
	return list.Approvals
}

// runAsync starts a /v1 run and returns its answer when it ends.
func runAsync(d *daemon, body map[string]any) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		resp, b := d.do("POST", "/v1/runs", tokenA, body)
		var a answer
		_ = json.Unmarshal(b, &a)
		if resp.StatusCode != 200 {
			a.Error = string(b)
		}
		out <- a
	}()
	return out
}

type traceEntry struct {
	Outcome  string                `json:"outcome"`
	Status   int                   `json:"status"`
	Reason   string                `json:"reason"`
	Route    string                `json:"route"`
	Approval *broker.ApprovalTrace `json:"approval"`
}

func entries(t *testing.T, a answer) []traceEntry {
	var out []traceEntry
	for _, raw := range a.Trace {
		out = append(out, decode[traceEntry](t, raw))
	}
	return out
}

func TestApprovalAdminApproveV1Run(t *testing.T) {
	d, rec := startShop(t, "  channels: [admin]\n")
	done := runAsync(d, run("petstore", payTool))

	list := pending(t, d, 1)
	q := list[0]
	wantHash := broker.CallHash("POST", "/payments", "", payHeaders, payBody)
	assert.Equal(t, wantHash, q.Hash, "the hash is over exactly what will be sent")
	assert.Equal(t, "POST", q.Method)
	assert.Equal(t, "/payments", q.Path)
	assert.Equal(t, "POST /payments", q.Route)
	assert.Equal(t, `{"cents":1200,"to":"acme"}`, q.Summary)
	assert.Equal(t, []string{"Content-Type: application/json"}, q.Headers)
	assert.Equal(t, "agent-a", q.Client)
	assert.Equal(t, "petstore", q.Profile)
	assert.Empty(t, rec.all(), "nothing leaves before the answer")

	// Approving needs the hash, and the right one.
	resp, body := d.send(d.admin, "POST", "/admin/approvals/"+q.ID+"/approve", "", map[string]string{})
	assert.Equal(t, 400, resp.StatusCode, "%s", body)
	resp, body = d.send(d.admin, "POST", "/admin/approvals/"+q.ID+"/approve", "", map[string]string{"hash": broker.CallHash("POST", "/payments", "", payHeaders, []byte(`{"to":"acme","cents":99999}`))})
	assert.Equal(t, 409, resp.StatusCode, "%s", body)
	resp, body = d.send(d.admin, "POST", "/admin/approvals/"+q.ID+"/approve", "", map[string]string{"hash": wantHash, "by": "ops-ana"})
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	resp, _ = d.send(d.admin, "POST", "/admin/approvals/"+q.ID+"/approve", "", map[string]string{"hash": wantHash})
	assert.Equal(t, 404, resp.StatusCode, "an approval is answered once")

	a := <-done
	require.Equal(t, "ok", a.Status, a.Error)
	assert.JSONEq(t, `{"status":200,"body":{"path":"/api/payments"}}`, string(a.Output))
	assert.Equal(t, []string{"POST /api/payments"}, rec.all())
	e := entries(t, a)[0]
	assert.Equal(t, "forwarded", e.Outcome)
	require.NotNil(t, e.Approval)
	assert.Equal(t, q.ID, e.Approval.ID)
	assert.Equal(t, "granted", e.Approval.Decision)
	assert.Equal(t, "admin", e.Approval.Channel)
	assert.Equal(t, "ops-ana", e.Approval.By)
	assert.Equal(t, wantHash, e.Approval.Hash)

	lines := auditOf(t, d, a.RunID)
	require.Len(t, lines, 1)
	ap := lines[0]["approvals"].(map[string]any)
	assert.Equal(t, 1.0, ap["requested"])
	assert.Equal(t, 1.0, ap["granted"])
	assert.Equal(t, 0.0, ap["declined"])
}

func TestApprovalAdminDeclineNeverLeaves(t *testing.T) {
	d, rec := startShop(t, "  channels: [admin]\n")
	done := runAsync(d, run("petstore", payTool))
	q := pending(t, d, 1)[0]
	resp, body := d.send(d.admin, "POST", "/admin/approvals/"+q.ID+"/decline", "", map[string]string{"by": "ops-ana", "reason": "duplicate invoice"})
	require.Equal(t, 200, resp.StatusCode, "%s", body)

	a := <-done
	require.Equal(t, "ok", a.Status, a.Error)
	var out struct {
		Status int `json:"status"`
		Body   struct{ Error, Reason string }
	}
	require.NoError(t, json.Unmarshal(a.Output, &out))
	assert.Equal(t, 403, out.Status)
	assert.Equal(t, "approval_declined", out.Body.Error)
	assert.NotContains(t, string(a.Output), "ops-ana", "the tool never learns who decided")
	assert.NotContains(t, string(a.Output), "duplicate", "nor why")
	assert.Empty(t, rec.all(), "a declined call never reaches the upstream")
	e := entries(t, a)[0]
	assert.Equal(t, "denied", e.Outcome)
	assert.Equal(t, "declined", e.Approval.Decision)
	assert.Equal(t, "duplicate invoice", e.Approval.Reason, "the operator's reason is in the trace")
}

func TestApprovalAdminRefusesBadAnswers(t *testing.T) {
	d, _ := startShop(t, "  channels: [admin]\n")
	resp, _ := d.send(d.admin, "POST", "/admin/approvals/nope/decline", "", map[string]string{})
	assert.Equal(t, 404, resp.StatusCode)
	resp, body := d.send(d.admin, "POST", "/admin/approvals/nope/decline", "", `{"reason":"x","extra":1}`)
	assert.Equal(t, 400, resp.StatusCode, "%s", body)
	resp, body = d.send(d.admin, "POST", "/admin/approvals/nope/decline", "", `{"reason":"`+strings.Repeat("x", 5000)+`"}`)
	assert.Equal(t, 413, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "is over 4096 bytes")
	resp, body = d.send(d.admin, "POST", "/admin/approvals/nope/decline", "", `{"reason":"x"} {"reason":"y"}`)
	assert.Equal(t, 400, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "more follows the object", "a second object is refused, not silently dropped")
	resp, body = d.send(d.admin, "POST", "/admin/approvals/nope/decline", "", map[string]string{"reason": "a\u202eb"})
	assert.Equal(t, 400, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "format character")
	resp, _ = d.send(d.admin, "POST", "/admin/approvals/nope/decline", "", map[string]string{}, "Origin", "http://evil.test")
	assert.Equal(t, 403, resp.StatusCode, "no cross-origin answer")
	resp, _ = d.send(d.admin, "GET", "/admin/approvals/nope/approve", "", nil)
	assert.Equal(t, 405, resp.StatusCode)
}

// A run whose deadline passes while its call waits ends as a timeout, with the call refused and
// counted, and the approval gone from the desk. The deadline is wall-clock time from the request,
// so on a busy machine it may pass before the guest reaches its call: such a run asked no one and
// proves nothing, and the test tries again with twice the time.
func TestApprovalRunDeadlineDuringWait(t *testing.T) {
	d, rec := startShop(t, "  channels: [admin]\n  timeout: 10m\n")
	for timeout := 2 * time.Second; ; timeout *= 2 {
		body := run("petstore", payTool)
		body["timeout"] = timeout.String()
		a := <-runAsync(d, body)
		assert.Equal(t, "timeout", a.Status, a.Error)
		lines := auditOf(t, d, a.RunID)
		require.Len(t, lines, 1)
		ap := lines[0]["approvals"].(map[string]any)
		if ap["requested"] == 0.0 && timeout < 2*time.Minute {
			t.Logf("the %s deadline passed before the guest reached its call; again with more time", timeout)
			continue
		}
		assert.Equal(t, 1.0, ap["requested"])
		assert.Equal(t, 1.0, ap["timed_out"])
		assert.Empty(t, rec.all())
		assert.Empty(t, pending(t, d, 0), "the desk forgets a call whose run ended")
		return
	}
}

// While one call waits for a person, the run's other calls go on and finish.
func TestApprovalConcurrentCallsGoOn(t *testing.T) {
	d, rec := startShop(t, "  channels: [admin]\n")
	done := runAsync(d, run("petstore", `
const [pay, a, b] = await Promise.all([api.post("/payments", {to: "acme", cents: 1200}), api.get("/pets/1"), api.get("/pets/2")]);
return [pay.status, a.status, b.status];`))
	q := pending(t, d, 1)[0]
	eventually(t, func() bool { return len(rec.all()) == 2 }, "the two GETs answered while the payment waits")
	assert.ElementsMatch(t, []string{"GET /api/pets/1", "GET /api/pets/2"}, rec.all())
	resp, body := d.send(d.admin, "POST", "/admin/approvals/"+q.ID+"/approve", "", map[string]string{"hash": q.Hash})
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	a := <-done
	require.Equal(t, "ok", a.Status, a.Error)
	assert.JSONEq(t, `[200,200,200]`, string(a.Output))
}

// Protocol versions: before 2026-07-28 the server sends an elicitation request during the tool
// call; from it on, the tool result asks and the client retries (multi round-trip). The SDK
// speaks 2026-07-28 over HTTP only when stateless, and the daemon's /mcp keeps sessions (an
// approval is bound to one), so a 2026 client is negotiated down here; stdio speaks 2026
// (cmd/plimsoll-run's TestMCPStdioRoundTrip).
const (
	classicMCP   = "2025-11-25"
	roundTripMCP = "2026-07-28"
)

// elicitingClient answers every elicitation with how, on protocol version.
func elicitingClient(t *testing.T, d *daemon, version string, how func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "approving-client", Version: "1.0"}, &mcp.ClientOptions{ElicitationHandler: how})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: d.api + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{tokenA}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	require.Equal(t, classicMCP, cs.InitializeResult().ProtocolVersion, "the stateful /mcp negotiates %s down", version)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestApprovalMCPElicitation(t *testing.T) {
	for _, version := range []string{classicMCP, roundTripMCP} {
		t.Run(version, func(t *testing.T) { testElicitation(t, version) })
	}
}

func testElicitation(t *testing.T, version string) {
	for _, tc := range []struct {
		action, decision, guest string
		forwarded               int
	}{
		{"accept", "granted", `"status":200`, 1},
		{"decline", "declined", "approval_declined", 0},
		{"cancel", "canceled", "approval_declined", 0},
	} {
		t.Run(tc.action, func(t *testing.T) {
			d, rec := startShop(t, "")
			var shown []string
			var mu sync.Mutex
			cs := elicitingClient(t, d, version, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				shown = append(shown, req.Params.Message)
				mu.Unlock()
				res := &mcp.ElicitResult{Action: tc.action}
				if tc.action == "accept" {
					res.Content = map[string]any{"note": "ok by me"}
				}
				return res, nil
			})
			res, out := callTool(t, cs, "run_petstore", payTool, nil)
			require.False(t, res.IsError, text(res))
			assert.Contains(t, string(out.Output), tc.guest)
			assert.Len(t, rec.all(), tc.forwarded)

			require.Len(t, shown, 1, "one question per gated call, to the client that started the run")
			assert.Contains(t, shown[0], "POST /payments")
			assert.Contains(t, shown[0], `{"cents":1200,"to":"acme"}`)
			assert.Contains(t, shown[0], "Content-Type: application/json")
			assert.Contains(t, shown[0], broker.CallHash("POST", "/payments", "", payHeaders, payBody))

			resp, body := d.do("GET", "/v1/runs/"+out.RunID, tokenA, nil)
			require.Equal(t, 200, resp.StatusCode)
			a := decode[answer](t, body)
			e := entries(t, a)[0]
			assert.Equal(t, tc.decision, e.Approval.Decision)
			assert.Equal(t, "elicit", e.Approval.Channel)
			assert.Equal(t, "mcp:agent-a", e.Approval.By)
		})
	}
}

func TestApprovalMCPNeverAnswers(t *testing.T) {
	d, rec := startShop(t, "  timeout: 1s\n  channels: [elicit]\n")
	cs := elicitingClient(t, d, classicMCP, func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		<-ctx.Done() // the person walked away
		return nil, ctx.Err()
	})
	res, out := callTool(t, cs, "run_petstore", payTool, nil)
	require.False(t, res.IsError, text(res))
	assert.Contains(t, string(out.Output), "approval_timeout")
	assert.Empty(t, rec.all())
	lines := auditOf(t, d, out.RunID)
	require.Len(t, lines, 1)
	assert.Equal(t, 1.0, lines[0]["approvals"].(map[string]any)["timed_out"])
}

// A client without the elicitation capability is not asked: the admin channel takes over.
func TestApprovalMCPWithoutElicitationGoesToAdmin(t *testing.T) {
	d, rec := startShop(t, "")
	cs, _ := connectMCP(t, d, tokenA, "plain-client")
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_petstore", Arguments: map[string]any{"code": payTool}})
		done <- result{res, err}
	}()
	q := pending(t, d, 1)[0]
	assert.Equal(t, "agent-a", q.Client)
	resp, body := d.send(d.admin, "POST", "/admin/approvals/"+q.ID+"/approve", "", map[string]string{"hash": q.Hash})
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	r := <-done
	require.NoError(t, r.err)
	assert.Contains(t, text(r.res), `"status":200`)
	assert.Equal(t, []string{"POST /api/payments"}, rec.all())
}

// With only the elicit channel and a client that cannot elicit, nobody can be asked: refused.
func TestApprovalNoChannelIsUnavailable(t *testing.T) {
	d, rec := startShop(t, "  channels: [elicit]\n")
	a := <-runAsync(d, run("petstore", payTool))
	require.Equal(t, "ok", a.Status, a.Error)
	assert.Contains(t, string(a.Output), "approval_unavailable")
	assert.Empty(t, rec.all())
}
