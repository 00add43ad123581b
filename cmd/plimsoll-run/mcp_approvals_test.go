package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

const deleteTool = `const r = await api.delete("/pets/" + input.id); return r.status == 200 ? "deleted" : JSON.parse(r.body).error;`

// approvalProfiles writes profile pets on api, DELETE /pets/* marked for approval.
func approvalProfiles(t *testing.T, api, approvals string) string {
	dir := t.TempDir()
	writeFile(t, dir, "pets.yaml", fmt.Sprintf("base_url: %s/v1\ncredential:\n  env: PETS_TOKEN\n  scheme: Bearer\nroutes: [GET /pets/*, DELETE /pets/*]\n"+
		"approvals: {routes: [DELETE /pets/*]%s}\n", api, approvals))
	return dir
}

// On stdio there is no admin plane: the client that started the run is asked, or no one. The
// SDK's client speaks 2026-07-28 and answers the tool result's question by itself.
func TestMCPStdioApprovals(t *testing.T) {
	api := newPetsAPI(t)
	dir := approvalProfiles(t, api.URL, "")
	var asked []string
	s := startStdioWith(t, func(o *mcp.ClientOptions) {
		o.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			if strings.Contains(req.Params.Message, "/pets/1\n") {
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
	}, "--profiles", dir, "--profile", "pets")
	require.Equal(t, "2026-07-28", s.cs.InitializeResult().ProtocolVersion)
	_, out := s.call(t, "run_pets", deleteTool, map[string]any{"id": 1})
	assert.Equal(t, `"deleted"`, string(out.Output))
	_, out = s.call(t, "run_pets", deleteTool, map[string]any{"id": 2})
	assert.Equal(t, `"approval_declined"`, string(out.Output))
	require.Len(t, asked, 2)
	assert.Contains(t, asked[0], "DELETE /pets/1")
	assert.Contains(t, asked[0], broker.CallHash("DELETE", "/pets/1", "", nil, nil))
	s.stop(t)

	// A client that cannot elicit is never asked, and no one else can be: refused.
	plain := startStdio(t, "--profiles", dir, "--profile", "pets")
	_, out = plain.call(t, "run_pets", deleteTool, map[string]any{"id": 3})
	assert.Equal(t, `"approval_unavailable"`, string(out.Output))
	plain.stop(t)
}

// manualRoundTrips is a stdio session whose client leaves the multi-round-trip retries to the
// test, on a profile whose approvals time out after timeout.
type manualRoundTrips struct {
	t     *testing.T
	s     *stdioServer
	audit string
}

func startManual(t *testing.T, timeout string) *manualRoundTrips {
	api := newPetsAPI(t)
	m := &manualRoundTrips{t: t, audit: filepath.Join(t.TempDir(), "audit.jsonl")}
	m.s = startStdioWith(t, func(o *mcp.ClientOptions) {
		o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
		o.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, fmt.Errorf("not called: the test answers")
		}
	}, "--profiles", approvalProfiles(t, api.URL, ", timeout: "+timeout), "--profile", "pets", "--audit", m.audit)
	t.Cleanup(func() { m.s.stop(t) })
	return m
}

// ask starts a run whose call needs approval; the result asks for it.
func (m *manualRoundTrips) ask(id int) *mcp.CallToolResult {
	res, err := m.s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_pets",
		Arguments: map[string]any{"code": deleteTool, "input": map[string]any{"id": id}}})
	require.NoError(m.t, err)
	require.True(m.t, res.NeedsInput(), "%+v", res)
	require.Len(m.t, res.InputRequests, 1)
	require.NotEmpty(m.t, res.RequestState)
	return res
}

// retry answers res's question with action, carrying state.
func (m *manualRoundTrips) retry(res *mcp.CallToolResult, state, action string) *mcp.CallToolResult {
	answers := mcp.InputResponseMap{}
	for id := range res.InputRequests {
		answers[id] = &mcp.ElicitResult{Action: action}
	}
	out, err := m.s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_pets",
		Arguments: map[string]any{"code": deleteTool, "input": map[string]any{"id": 0}}, InputResponses: answers, RequestState: state})
	require.NoError(m.t, err)
	return out
}

// The multi-round-trip form by hand: the tool result asks, the retry answers with the state it
// carried. A tampered state and a replayed one are each refused; the timeout is long, so nothing
// here races it.
func TestMCPStdioRoundTripState(t *testing.T) {
	m := startManual(t, "5m")
	first := m.ask(1)
	for id, ir := range first.InputRequests {
		ep, ok := ir.(*mcp.ElicitParams)
		require.True(t, ok, "an elicitation: %T", ir)
		assert.Contains(t, ep.Message, "DELETE /pets/1")
		assert.Len(t, id, 16)
	}
	payload, sig, _ := strings.Cut(first.RequestState, ".")
	b := []byte(payload) // one character in the middle, where every bit is the payload's
	if b[len(b)/2] == 'A' {
		b[len(b)/2] = 'B'
	} else {
		b[len(b)/2] = 'A'
	}
	res := m.retry(first, string(b)+"."+sig, "accept")
	assert.True(t, res.IsError)
	assert.Contains(t, resultText(res), "requestState is not one this server signed")
	res = m.retry(first, "not-a-state", "accept")
	assert.Contains(t, resultText(res), "requestState is not one this server signed")

	res = m.retry(first, first.RequestState, "accept")
	require.False(t, res.IsError, resultText(res))
	assert.Equal(t, `"deleted"`, resultText(res), "the tampered tries answered nothing; the real one went through")

	res = m.retry(first, first.RequestState, "accept")
	assert.True(t, res.IsError)
	assert.Contains(t, resultText(res), "already used")
}

// Expired: nobody answers until the approval has timed out and its run has ended (its audit
// line is written); the state is refused after that.
func TestMCPStdioRoundTripExpired(t *testing.T) {
	m := startManual(t, "1s")
	q := m.ask(2)
	waitFor(t, func() bool {
		for _, l := range auditFileLines(t, m.audit) {
			if ap, ok := l["approvals"].(map[string]any); ok && ap["timed_out"] == 1.0 {
				return true
			}
		}
		return false
	}, "the unanswered approval's run to end")
	res := m.retry(q, q.RequestState, "accept")
	assert.True(t, res.IsError)
	assert.Contains(t, resultText(res), "expired")
}

// An approved stdio call is counted on the run's audit line.
func TestMCPStdioApprovalAudit(t *testing.T) {
	api := newPetsAPI(t)
	dir := approvalProfiles(t, api.URL, "")
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startStdioWith(t, func(o *mcp.ClientOptions) {
		o.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"note": "vet says ok"}}, nil
		}
	}, "--profiles", dir, "--profile", "pets", "--audit", audit)
	_, out := s.call(t, "run_pets", deleteTool, map[string]any{"id": 4})
	assert.Equal(t, `"deleted"`, string(out.Output))
	s.stop(t)
	lines := auditFileLines(t, audit)
	require.Len(t, lines, 1)
	assert.Equal(t, map[string]any{"requested": 1.0, "granted": 1.0, "declined": 0.0, "timed_out": 0.0, "unavailable": 0.0,
		"wait_ms": lines[0]["approvals"].(map[string]any)["wait_ms"]}, lines[0]["approvals"])
}

// A client that leaves while its run waits for its answer: the run is canceled with the session
// (nobody is left to answer), it is audited once, and the process exits without waiting out the
// approval's 10 minutes. stop gives it a minute, far under them.
func TestMCPStdioRoundTripClientLeaves(t *testing.T) {
	m := startManual(t, "10m")
	m.ask(5)
	m.s.stop(t)
	lines := auditFileLines(t, m.audit)
	require.Len(t, lines, 1)
	assert.Equal(t, "error", lines[0]["status"], "%v", lines[0])
	assert.Equal(t, 1.0, lines[0]["approvals"].(map[string]any)["timed_out"], "the question was never answered")
}
