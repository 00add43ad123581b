package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/server"
)

// TestEmbeddedServer: a process of its own mounts the Server's Handler beside its own route on
// its own listener, runs a JS tool over /v1 and over MCP against a real upstream, and shuts the
// Server down while an MCP run is held upstream: that run is audited once, and the process's own
// route goes on answering.
func TestEmbeddedServer(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	profiles := filepath.Join(dir, "profiles")
	require.NoError(t, os.Mkdir(profiles, 0o755))
	// Nothing but Shutdown's context may end the held run: not the run's or the call's timeout, nor Drain.
	writeProfile(t, profiles, "petstore", up.URL, "limits:\n  run_timeout: 1h\n  call_timeout: 1h\n")
	auditFile := filepath.Join(dir, "audit.jsonl")
	s, err := server.New(context.Background(), server.Config{ProfilesDir: profiles, AuditFile: auditFile, Drain: time.Hour,
		CacheDir: testcache.Dir(), Getenv: envOf(map[string]string{"UPSTREAM_TOKEN": upstreamSecret}),
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.NoError(t, err)

	mux := http.NewServeMux() // the embedding process's own mux, listener and server
	mux.HandleFunc("GET /own", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "own route") })
	mux.Handle("/", s.Handler())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	own := &http.Server{Handler: mux}
	go own.Serve(l)
	t.Cleanup(func() { own.Close() })
	d := &daemon{t: t, api: "http://" + l.Addr().String(), auditFile: auditFile}
	eventually(t, func() bool { return d.status("GET", "/readyz", "", nil) == 200 }, "readyz")

	resp, b := d.do("POST", "/v1/runs", "", run("petstore", `return (await api.get("/pets/1")).json();`))
	require.Equal(t, 200, resp.StatusCode, "%s", b)
	a := decode[answer](t, b)
	assert.Equal(t, "ok", a.Status)
	assert.JSONEq(t, `{"path":"/api/pets/1"}`, string(a.Output))
	resp, b = d.do("GET", "/v1/profiles", "", nil)
	require.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(b), `"petstore"`)

	cs, _ := connectMCP(t, d, "", "embedder")
	assert.Contains(t, toolNames(t, cs), "run_petstore")
	_, res := callTool(t, cs, "run_petstore", `return (await api.get("/pets/2")).json();`, nil)
	assert.EqualValues(t, "ok", res.Status)

	held := make(chan struct{})
	go func() { // the MCP answer may be a tool error or the closed session: the audit line is what counts
		defer close(held)
		cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_petstore", Arguments: map[string]any{"code": blockTool}})
	}()
	up.waitArrived(t, 1)
	cut, cancel := context.WithCancel(context.Background())
	cancel() // no time to finish: Shutdown's context, not the hour of Drain, cancels the held run
	stopped := make(chan error, 1)
	go func() { stopped <- s.Shutdown(cut) }()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(2 * time.Minute): // a failure bound: only an ignored context waits this long
		up.open() // let the held run end, so the MCP session's cleanup does not wait on it
		t.Fatal("Shutdown waited for Drain although its context had ended")
	}
	<-held

	lines := auditLines(t, auditFile)
	require.Len(t, lines, 3, "one audit line per run: /v1, MCP, and the run cut by Shutdown")
	ids := map[any]bool{}
	for _, l := range lines {
		ids[l["run_id"]] = true
	}
	assert.Len(t, ids, 3, "no run audited twice")
	assert.Equal(t, "ok", lines[0]["status"])
	assert.Equal(t, "ok", lines[1]["status"])
	assert.NotEqual(t, "ok", lines[2]["status"], "the held run was cancelled: %v", lines[2])
	assert.Equal(t, "embedder", lines[2]["mcp_client"], "the held run is the MCP one")
	j, err := os.ReadFile(auditFile + ".journal")
	require.NoError(t, err)
	assert.Empty(t, j, "every run's line is in the audit file; the journal holds none")

	assert.Equal(t, 503, d.status("POST", "/v1/runs", "", run("petstore", "return 1")), "a run after Shutdown")
	resp, b = d.do("GET", "/own", "", nil)
	assert.Equal(t, "own route", string(b), "the embedding process still serves: %d", resp.StatusCode)
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	assert.True(t, errors.Is(s.Serve(l2), http.ErrServerClosed), "Serve after Shutdown")
	assert.NoError(t, s.Shutdown(context.Background()), "a second Shutdown")
}

// farListener is a loopback listener that reports an address off loopback, so the test can
// check the refusal without binding a public interface.
type farListener struct{ net.Listener }

func (farListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 7070} }

// TestEmbeddedOpenModeStaysOnLoopback: without clients (or without an admin token) an embedded
// Server refuses a listener off loopback, and its handlers refuse a peer off loopback, as Run
// refuses such a listen address.
func TestEmbeddedOpenModeStaysOnLoopback(t *testing.T) {
	dir := t.TempDir()
	s, err := server.New(context.Background(), server.Config{ProfilesDir: dir, AuditOut: io.Discard,
		CacheDir: testcache.Dir(), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { s.Shutdown(context.Background()) })

	for name, serve := range map[string]func(net.Listener) error{"listen": s.Serve, "admin": s.ServeAdmin} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		var ce *server.ConfigError
		require.True(t, errors.As(serve(farListener{l}), &ce), "%s: a listener off loopback is refused", name)
		assert.Equal(t, name, ce.Flag)
		assert.Contains(t, ce.Reason, "192.0.2.1:7070")
		_, err = l.Accept()
		assert.Error(t, err, "%s: the refused listener is closed", name)
	}

	for name, h := range map[string]http.Handler{"api": s.Handler(), "admin": s.AdminHandler()} {
		for peer, want := range map[string]int{"192.0.2.1:40000": http.StatusForbidden, "127.0.0.1:40000": http.StatusOK, "[::1]:40000": http.StatusOK,
			"[::ffff:127.0.0.1]:40000": http.StatusOK, "[::ffff:192.0.2.1]:40000": http.StatusForbidden,
			// A bare IP, as a real-IP middleware in front of the Handler writes X-Forwarded-For's
			// first address, is that IP, not a Unix socket's peer.
			"192.0.2.1": http.StatusForbidden, "2001:db8::1": http.StatusForbidden, "[2001:db8::1]": http.StatusForbidden, "127.0.0.1": http.StatusOK,
			"@": http.StatusOK,
			// A link-local peer's address carries its zone; it is an IP all the same.
			"[fe80::1%eth0]:40000": http.StatusForbidden, "fe80::1%eth0": http.StatusForbidden} {
			req := httptest.NewRequest("GET", "http://127.0.0.1/livez", nil)
			req.RemoteAddr = peer
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, want, rec.Code, "%s handler, peer %s: %s", name, peer, rec.Body)
		}
	}
}
