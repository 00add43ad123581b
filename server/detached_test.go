package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/server"
)

// A run started with "wait": false answers 202 at once; GET /v1/runs/{id} shows it running (its
// counters, calls and log so far) to the client that started it, then its result.
func TestDetachedRunIsPolledWhileRunningThenAnswered(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	body := run("petstore", `console.log("first"); await api.get("/pets/1"); console.log("held"); return (await api.get("/block")).json();`)
	body["wait"] = false
	resp, b := d.do("POST", "/v1/runs", tokenA, body)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", b)
	started := decode[map[string]string](t, b)
	id := started["run_id"]
	require.NotEmpty(t, id)
	assert.Equal(t, "running", started["status"])
	assert.Equal(t, "/v1/runs/"+id, resp.Header.Get("Location"))

	up.waitArrived(t, 1)
	resp, b = d.do("GET", "/v1/runs/"+id, tokenA, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	running := decode[server.RunningAnswer](t, b)
	assert.Equal(t, server.StatusRunning, running.Status)
	assert.Equal(t, id, running.RunID)
	assert.Equal(t, "agent-a", running.Client)
	assert.Equal(t, 1, running.Forwarded, "the first call's answer")
	assert.Equal(t, 1, running.CallsInFlight, "the held call")
	require.Len(t, running.Trace, 1)
	assert.Equal(t, "/pets/1", running.Trace[0].Path)
	assert.Equal(t, "first\nheld\n", running.Log)

	assert.Equal(t, http.StatusNotFound, d.status("GET", "/v1/runs/"+id, tokenB, nil), "another client's run is not disclosed")

	up.open()
	var done answer
	eventually(t, func() bool {
		_, b := d.do("GET", "/v1/runs/"+id, tokenA, nil)
		done = decode[answer](t, b)
		return done.Status != "running"
	}, "the run's result")
	assert.Equal(t, "ok", done.Status)
	assert.JSONEq(t, `{"path":"/api/block"}`, string(done.Output))
	var lines int
	for _, l := range auditLines(t, d.auditFile) {
		if l["run_id"] == id {
			lines++
		}
	}
	assert.Equal(t, 1, lines, "one audit line")
}

func TestWaitMustBeABoolean(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	body := run("petstore", "return 1")
	body["wait"] = "no"
	resp, b := d.do("POST", "/v1/runs", tokenA, body)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var e struct{ Field, Error string }
	require.NoError(t, json.Unmarshal(b, &e))
	assert.Equal(t, "wait", e.Field, e.Error)
}

// ?stream=ndjson follows a running run: its log lines and calls so far and as they come, then
// the result line, as POST /v1/runs's NDJSON answer has them.
func TestDetachedRunStreamed(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	body := run("petstore", `console.log("first"); await api.get("/pets/1"); console.log("held"); return (await api.get("/block")).json();`)
	body["wait"] = false
	resp, b := d.do("POST", "/v1/runs", tokenA, body)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", b)
	id := decode[map[string]string](t, b)["run_id"]
	up.waitArrived(t, 1)

	req, err := http.NewRequest("GET", d.api+"/v1/runs/"+id+"?stream=ndjson", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	sresp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer sresp.Body.Close()
	require.Equal(t, server.MediaNDJSON, sresp.Header.Get("Content-Type"))
	lines := bufio.NewScanner(sresp.Body)
	next := func() map[string]any {
		t.Helper()
		require.True(t, lines.Scan(), "a line: %v", lines.Err())
		return decode[map[string]any](t, lines.Bytes())
	}
	// What happened before the stream was opened comes first: calls, then the log.
	first := next()
	assert.Equal(t, "call", first["type"])
	assert.Equal(t, "/pets/1", first["entry"].(map[string]any)["path"])
	assert.Equal(t, map[string]any{"type": "log", "line": "first"}, next())
	assert.Equal(t, map[string]any{"type": "log", "line": "held"}, next())

	up.open() // the held call answers: it streams as it happens, then the result
	call := next()
	assert.Equal(t, "call", call["type"])
	assert.Equal(t, "/block", call["entry"].(map[string]any)["path"])
	result := next()
	assert.Equal(t, "result", result["type"])
	assert.Equal(t, "ok", result["status"])
	assert.False(t, lines.Scan(), "nothing after the result")

	// Once ended, the stream is the result line alone.
	resp, b = d.do("GET", "/v1/runs/"+id+"?stream=ndjson", tokenA, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "result", decode[map[string]any](t, b)["type"])
}
