package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/server"
)

const operatorToken = "operator-token-0123456789abcdef"

// withAdminToken guards the admin plane with operatorToken.
func withAdminToken(c *server.Config) {
	c.AdminTokenEnv = "PLIMSOLL_ADMIN_TOKEN"
	env := c.Getenv
	c.Getenv = func(k string) string {
		if k == "PLIMSOLL_ADMIN_TOKEN" {
			return operatorToken
		}
		return env(k)
	}
}

// switchable is a loopback API whose answer to /api/items the test switches: 200, 503 with
// Retry-After, or 410 (the tool's signal to stop).
type switchable struct {
	*upstream
	mode  atomic.Int32 // 0: 200, 1: 503, 2: 410
	calls atomic.Int64
}

func newSwitchable(t *testing.T, retryAfter string) *switchable {
	s := &switchable{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+upstreamSecret {
			http.Error(w, "no credential", http.StatusUnauthorized)
			return
		}
		s.calls.Add(1)
		switch s.mode.Load() {
		case 1:
			w.Header().Set("Retry-After", retryAfter)
			w.WriteHeader(503)
		case 2:
			w.WriteHeader(410)
		}
		fmt.Fprint(w, `{}`)
	}))
	s.upstream = &upstream{Server: srv, release: make(chan struct{})}
	t.Cleanup(srv.Close)
	return s
}

// loopTool calls /items every 20 ms until the API answers 410, and returns how many calls it made.
const loopTool = `let n = 0;
for (;;) { const r = await api.get("/items", {query: "q=private-query"}); n++; if (r.status === 410) return n; await sleep(20); }`

func TestRunTimelineOverTheAPI(t *testing.T) {
	up := newSwitchable(t, "120")
	d := start(t, up.upstream)
	up.mode.Store(1) // the first call opens a window: Retry-After 120, clamped to 30 s
	resp, b := d.do("POST", "/v1/runs", tokenB, run("petstore", `await api.get("/items"); await api.get("/items"); await api.get("/nope/1/2"); return 1;`))
	require.Equal(t, 200, resp.StatusCode, string(b))
	a := decode[answer](t, b)

	resp, svg := d.do("GET", "/v1/runs/"+a.RunID+"/timeline", tokenB, nil)
	require.Equal(t, 200, resp.StatusCode, string(svg))
	assert.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))
	assert.Equal(t, "default-src 'none'; style-src 'unsafe-inline'", resp.Header.Get("Content-Security-Policy"))
	doc := string(svg)
	assert.Equal(t, 1, strings.Count(doc, `class="call overloaded"`))
	assert.Equal(t, 1, strings.Count(doc, `class="call shed"`))
	assert.Equal(t, 1, strings.Count(doc, `class="call denied"`))
	assert.Contains(t, doc, "503 · Retry-After 120 → 30.0 s (clamped)")
	assert.NotContains(t, doc, "/nope/1/2", "no raw path")
	noSecret(t, "the chart", doc)

	resp, page := d.do("GET", "/v1/runs/"+a.RunID+"/timeline?format=html", tokenB, nil)
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Contains(t, string(page), "<!doctype html>")

	resp, body := d.do("GET", "/v1/runs/"+a.RunID+"/timeline?format=png", tokenB, nil)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Contains(t, string(body), "want svg or html")

	// agent-a may use petstore too, but this run is agent-b's: not found, as for a run that never was.
	resp, body = d.do("GET", "/v1/runs/"+a.RunID+"/timeline", tokenA, nil)
	assert.Equal(t, 404, resp.StatusCode)
	_, none := d.do("GET", "/v1/runs/0000000000000000/timeline", tokenA, nil)
	assert.Equal(t, string(none), string(body), "another client's run looks exactly like no run")
	assert.Equal(t, 401, d.status("GET", "/v1/runs/"+a.RunID+"/timeline", "", nil))

	// The answer carries the breaker events beside the trace.
	var full struct {
		Events []map[string]any `json:"breaker_events"`
	}
	_, b = d.do("GET", "/v1/runs/"+a.RunID, tokenB, nil)
	require.NoError(t, json.Unmarshal(b, &full))
	require.Len(t, full.Events, 1)
	assert.Equal(t, "open", full.Events[0]["kind"])
}

func TestOperatorAPIAndPageNeedTheToken(t *testing.T) {
	up := newSwitchable(t, "2")
	d := start(t, up.upstream, withAdminToken)

	// The page's files hold no data and load without the token, under a strict CSP.
	for _, path := range []string{"/admin/", "/admin/page/app.js", "/admin/page/app.css"} {
		resp, b := d.adm("GET", path, "", nil)
		require.Equal(t, 200, resp.StatusCode, path)
		csp := resp.Header.Get("Content-Security-Policy")
		assert.Contains(t, csp, "default-src 'none'", path)
		assert.Contains(t, csp, "script-src 'self'", path)
		assert.Contains(t, csp, "frame-ancestors 'none'", path)
		assert.NotContains(t, string(b), "http://", "%s loads nothing from elsewhere", path)
		assert.NotContains(t, string(b), "https://", path)
	}
	_, page := d.adm("GET", "/admin/", "", nil)
	assert.Contains(t, string(page), `<script src="page/app.js" defer></script>`)
	assert.NotContains(t, string(page), "<script>", "no inline script")

	// What the page reads and does needs the token; a mutation also needs the same origin.
	assert.Equal(t, 401, d.status2(d.admin, "GET", "/admin/openings", ""))
	assert.Equal(t, 401, d.status2(d.admin, "GET", "/admin/runs/abc/timeline", ""))
	assert.Equal(t, 404, d.status2(d.admin, "GET", "/admin/runs/abc/timeline", operatorToken))
	resp, _ := d.adm("POST", "/admin/profiles/petstore/force-open", "", map[string]string{"reason": "x"})
	assert.Equal(t, 401, resp.StatusCode)
	resp, _ = d.adm("POST", "/admin/profiles/petstore/force-open", operatorToken, map[string]string{"reason": "x"}, "Origin", "http://evil.example")
	assert.Equal(t, 403, resp.StatusCode)
	assert.Nil(t, d.adminStateWith(operatorToken, "petstore").ForcedOpen, "a refused mutation changed nothing")
}

// status2 is a request to base with only a token.
func (d *daemon) status2(base, method, path, token string) int {
	resp, _ := d.send(base, method, path, token, nil)
	return resp.StatusCode
}

func (d *daemon) adminStateWith(token, profile string) server.ProfileState {
	d.t.Helper()
	_, b := d.adm("GET", "/admin/state?profile="+profile, token, nil)
	st := decode[server.AdminState](d.t, b)
	require.Len(d.t, st.Profiles, 1)
	return st.Profiles[0]
}

// A live run's chart grows on the admin plane, and its breaker openings are listed.
func TestLiveTimelineAndOpenings(t *testing.T) {
	up := newSwitchable(t, "2")
	d := start(t, up.upstream, withAdminToken)
	done := d.runAsync(tokenB, run("petstore", loopTool))
	var id string
	eventually(t, func() bool {
		live := d.adminStateWith(operatorToken, "petstore").Live
		if len(live) == 1 && live[0].Forwarded >= 2 {
			id = live[0].RunID
		}
		return id != ""
	}, "a live run with calls")
	up.mode.Store(1)
	eventually(t, func() bool {
		_, b := d.adm("GET", "/admin/openings", operatorToken, nil)
		return strings.Contains(string(b), `"run_id":"`+id+`"`) && strings.Contains(string(b), `"live":true`)
	}, "the live run's opening listed")
	resp, svg := d.adm("GET", "/admin/runs/"+id+"/timeline", operatorToken, nil)
	require.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(svg), `class="call overloaded"`)
	assert.Contains(t, string(svg), "· running")
	assert.NotContains(t, string(svg), "private-query")
	up.mode.Store(2)
	a := <-done
	require.Equal(t, "ok", a.Status, a.Error)
	_, b := d.adm("GET", "/admin/openings", operatorToken, nil)
	assert.Contains(t, string(b), `"run_id":"`+id+`"`, "kept after the run ended")
	assert.NotContains(t, string(b), `"live":true`)
	resp, _ = d.adm("GET", "/admin/runs/"+id+"/timeline", operatorToken, nil)
	assert.Equal(t, 200, resp.StatusCode, "a recent run is drawn from the ring")
}
