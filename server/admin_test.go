package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/server"
)

// gate is a loopback API whose /api/gate calls are each held until the test releases that one
// call: a tool that waits between calls, with no sleep anywhere.
type gate struct {
	*upstream
	held chan chan struct{}
	mu   sync.Mutex
	seen []string
}

func newGate(t *testing.T) *gate {
	g := &gate{held: make(chan chan struct{}, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+upstreamSecret {
			http.Error(w, "no credential", http.StatusUnauthorized)
			return
		}
		g.mu.Lock()
		g.seen = append(g.seen, r.URL.Path)
		g.mu.Unlock()
		if r.URL.Path == "/api/gate" {
			release := make(chan struct{})
			g.held <- release
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	g.upstream = &upstream{Server: srv, release: make(chan struct{})}
	t.Cleanup(srv.Close)
	return g
}

// next waits for the next held call and returns its release.
func (g *gate) next(t *testing.T) chan struct{} {
	t.Helper()
	select {
	case r := <-g.held:
		return r
	case <-time.After(60 * time.Second): // a failure bound, not a timing assertion
		t.Fatal("no call reached the gate")
		return nil
	}
}

func (g *gate) paths() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.seen)
}

// admin sends a request to the admin listener.
func (d *daemon) adm(method, path, token string, body any, hdr ...string) (*http.Response, []byte) {
	d.t.Helper()
	return d.send(d.admin, method, path, token, body, hdr...)
}

func (d *daemon) adminState(profile string) server.ProfileState {
	d.t.Helper()
	resp, b := d.adm("GET", "/admin/state?profile="+profile, "", nil)
	if resp.StatusCode != 200 {
		d.t.Fatalf("GET /admin/state: %d %s", resp.StatusCode, b)
	}
	st := decode[server.AdminState](d.t, b)
	if len(st.Profiles) != 1 || st.Profiles[0].Name != profile {
		d.t.Fatalf("?profile=%s does not filter: %s", profile, b)
	}
	return st.Profiles[0]
}

// runAsync posts a run and delivers its answer.
func (d *daemon) runAsync(token string, body any) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		_, b := d.do("POST", "/v1/runs", token, body)
		var a answer
		json.Unmarshal(b, &a)
		ch <- a
	}()
	return ch
}

const gatedTool = `
const a = await api.get("/pets/1");
const b = await api.get("/gate");
const c = await api.get("/pets/2");
return [a.status, b.status, c.status, c.headers["retry-after"] || null];`

func TestForceOpenShedsLiveAndNewRunsAndClearRestores(t *testing.T) {
	g := newGate(t)
	d := start(t, g.upstream)

	// A live run, held at its second call: the state shows it with exact counters.
	live := d.runAsync(tokenB, run("petstore", gatedTool))
	release := g.next(t)
	p := d.adminState("petstore")
	if p.LiveRuns != 1 || len(p.Live) != 1 || p.ForcedOpen != nil || p.Version != 1 || !p.Served {
		t.Fatalf("state before: %+v", p)
	}
	r := p.Live[0]
	if r.Client != "agent-b" || r.Profile != "petstore" || r.Tool == "" || r.RunID == "" ||
		r.HostCalls != 1 || r.Forwarded != 1 || r.Shed != 0 || r.CallsInFlight != 1 || r.Breaker != "closed" || r.BudgetCalls != 100 {
		t.Fatalf("live run: %+v", r)
	}

	// Force open: the live run's next call is shed, and nothing reaches the upstream.
	resp, b := d.adm("POST", "/admin/profiles/petstore/force-open", "", map[string]any{"reason": "INC-42 petstore answers 500s"})
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"live_runs":1`) || !strings.Contains(string(b), "lost when the daemon restarts") {
		t.Fatalf("force-open: %d %s", resp.StatusCode, b)
	}
	close(release)
	a := <-live
	if string(a.Output) != `[200,200,503,"30"]` || a.Audit["forced_open"] != "INC-42 petstore answers 500s" || a.Audit["host_calls_shed"] != 1.0 {
		t.Fatalf("live run's answer: %+v", a)
	}
	var last map[string]any
	json.Unmarshal(a.Trace[2], &last)
	if last["outcome"] != "shed" || last["reason"] != "forced open by the operator: INC-42 petstore answers 500s" {
		t.Fatalf("trace: %s", a.Trace[2])
	}
	want := []string{"/api/pets/1", "/api/gate"}
	if got := g.paths(); !slices.Equal(got, want) {
		t.Fatalf("upstream saw %v, want %v", got, want)
	}

	// A new run's first call is shed too; another profile is not forced.
	_, b = d.do("POST", "/v1/runs", tokenB, run("petstore", `const r = await api.get("/pets/3"); return r.status`))
	if a := decode[answer](t, b); string(a.Output) != "503" || a.Audit["forced_open"] != "INC-42 petstore answers 500s" {
		t.Fatalf("new run while forced: %s", b)
	}
	_, b = d.do("POST", "/v1/runs", tokenB, run("inventory", `const r = await api.get("/pets/4"); return r.status`))
	if a := decode[answer](t, b); string(a.Output) != "200" || a.Audit["forced_open"] != nil {
		t.Fatalf("another profile: %s", b)
	}
	if got := g.paths(); !slices.Equal(got, append(want, "/api/pets/4")) {
		t.Fatalf("upstream saw %v", got)
	}
	p = d.adminState("petstore")
	if p.ForcedOpen == nil || p.ForcedOpen.Reason != "INC-42 petstore answers 500s" || p.ForcedOpen.Since.IsZero() || p.LiveRuns != 0 || p.Runs["ok"] != 2 {
		t.Fatalf("state while forced: %+v", p)
	}
	_, m := d.adm("GET", "/metrics", "", nil)
	for _, line := range []string{`plimsoll_profile_forced_open{profile="petstore"} 1`, `plimsoll_profile_forced_open{profile="inventory"} 0`,
		`plimsoll_runs_total{profile="petstore",status="ok"} 2`, `plimsoll_profile_runs_live{profile="petstore"} 0`} {
		if !strings.Contains(string(m), line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}

	// Forced open survives a reload of the profile.
	writeProfile(t, d.dir, "petstore", g.URL, "description: v2\n")
	eventually(t, func() bool { return d.adminState("petstore").Version == 2 }, "petstore v2")
	if d.adminState("petstore").ForcedOpen == nil {
		t.Fatal("a reload cleared the flag")
	}

	// Clear: forwarding again.
	resp, b = d.adm("DELETE", "/admin/profiles/petstore/force-open", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"cleared":{"reason":"INC-42`) || !strings.Contains(string(b), `"forced_open":null`) {
		t.Fatalf("clear: %d %s", resp.StatusCode, b)
	}
	_, b = d.do("POST", "/v1/runs", tokenB, run("petstore", `const r = await api.get("/pets/5"); return r.status`))
	if a := decode[answer](t, b); string(a.Output) != "200" || a.Audit["forced_open"] != nil {
		t.Fatalf("after clear: %s", b)
	}
	if d.adminState("petstore").ForcedOpen != nil {
		t.Fatal("still forced after clear")
	}
	// The audit file says so too.
	forced := 0
	for _, l := range auditLines(t, d.auditFile) {
		if l["forced_open"] == "INC-42 petstore answers 500s" {
			forced++
		}
	}
	if forced != 2 {
		t.Fatalf("%d audit lines name the forced open, want 2", forced)
	}
}

func TestForceOpenRefusals(t *testing.T) {
	g := newGate(t)
	d := start(t, g.upstream)
	cases := []struct {
		name, method, path string
		body               any
		hdr                []string
		code               int
	}{
		{"GET to force-open", "GET", "/admin/profiles/petstore/force-open", nil, nil, 405},
		{"GET to reload", "GET", "/admin/reload", nil, nil, 405},
		{"no reason", "POST", "/admin/profiles/petstore/force-open", map[string]any{}, nil, 400},
		{"empty reason", "POST", "/admin/profiles/petstore/force-open", map[string]any{"reason": " "}, nil, 400},
		{"control character", "POST", "/admin/profiles/petstore/force-open", map[string]any{"reason": "a\nb"}, nil, 400},
		{"long reason", "POST", "/admin/profiles/petstore/force-open", map[string]any{"reason": strings.Repeat("x", 201)}, nil, 400},
		{"unknown field", "POST", "/admin/profiles/petstore/force-open", map[string]any{"reason": "x", "until": "5m"}, nil, 400},
		{"unknown profile", "POST", "/admin/profiles/nope/force-open", map[string]any{"reason": "x"}, nil, 404},
		{"unknown profile, clear", "DELETE", "/admin/profiles/nope/force-open", nil, nil, 404},
		{"cross-origin", "POST", "/admin/profiles/petstore/force-open", map[string]any{"reason": "x"}, []string{"Origin", "http://evil.example"}, 403},
		{"state of an unknown profile", "GET", "/admin/state?profile=nope", nil, nil, 404},
	}
	for _, c := range cases {
		if resp, b := d.adm(c.method, c.path, "", c.body, c.hdr...); resp.StatusCode != c.code {
			t.Errorf("%s: %d, want %d: %s", c.name, resp.StatusCode, c.code, b)
		}
	}
	req, _ := http.NewRequest("POST", d.admin+"/admin/profiles/petstore/force-open", strings.NewReader("reason=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 415 {
		t.Errorf("a form post: %v %v", resp, err)
	}
	if d.adminState("petstore").ForcedOpen != nil {
		t.Fatal("a refused request forced the profile open")
	}
	// The API listener has no admin routes.
	if got := d.status("GET", "/admin/state", tokenB, nil); got != 404 {
		t.Errorf("GET /admin/state on the API listener: %d", got)
	}
}

func TestAdminToken(t *testing.T) {
	const adminToken = "admin-token-0123456789abcdef"
	g := newGate(t)
	d := start(t, g.upstream, func(c *server.Config) {
		c.AdminTokenEnv = "PLIMSOLL_ADMIN_TOKEN"
		env := c.Getenv
		c.Getenv = func(k string) string {
			if k == "PLIMSOLL_ADMIN_TOKEN" {
				return adminToken
			}
			return env(k)
		}
	})
	for _, c := range []struct {
		name, method, path, token string
		body                      any
		code                      int
	}{
		{"state, no token", "GET", "/admin/state", "", nil, 401},
		{"state, a client's token", "GET", "/admin/state", tokenB, nil, 401},
		{"state, wrong token", "GET", "/admin/state", "admin-token-0123456789abcdeX", nil, 401},
		{"state, right token", "GET", "/admin/state", adminToken, nil, 200},
		{"profiles, no token", "GET", "/admin/profiles", "", nil, 401},
		{"force-open, no token", "POST", "/admin/profiles/petstore/force-open", "", map[string]any{"reason": "x"}, 401},
		{"force-open, wrong token", "POST", "/admin/profiles/petstore/force-open", tokenA, map[string]any{"reason": "x"}, 401},
		{"reload, no token", "POST", "/admin/reload", "", nil, 401},
		{"GET to a mutation, right token", "GET", "/admin/profiles/petstore/force-open", adminToken, nil, 405},
		{"force-open, right token", "POST", "/admin/profiles/petstore/force-open", adminToken, map[string]any{"reason": "x"}, 200},
		{"clear, no token", "DELETE", "/admin/profiles/petstore/force-open", "", nil, 401},
		{"clear, right token", "DELETE", "/admin/profiles/petstore/force-open", adminToken, nil, 200},
		{"livez stays open", "GET", "/livez", "", nil, 200},
		{"metrics, no token", "GET", "/metrics", "", nil, 401},
		{"metrics, right token", "GET", "/metrics", adminToken, nil, 200},
	} {
		resp, b := d.adm(c.method, c.path, c.token, c.body)
		if resp.StatusCode != c.code {
			t.Errorf("%s: %d, want %d: %s", c.name, resp.StatusCode, c.code, b)
		}
		if c.code == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: no WWW-Authenticate", c.name)
		}
		if strings.Contains(string(b), adminToken) {
			t.Errorf("%s: the answer shows the admin token", c.name)
		}
	}
	if strings.Contains(d.logs.String(), adminToken) {
		t.Fatal("the log shows the admin token")
	}
}

func TestAdminTokenRefusedConfig(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		cfg  server.Config
		flag string
	}{
		{"short token", server.Config{ProfilesDir: dir, Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", AdminTokenEnv: "T", Getenv: envOf(map[string]string{"T": "short"})}, "admin-token-env"},
		{"unset token", server.Config{ProfilesDir: dir, Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", AdminTokenEnv: "T", Getenv: envOf(nil)}, "admin-token-env"},
		{"public admin without a token", server.Config{ProfilesDir: dir, Listen: "127.0.0.1:0", Admin: "0.0.0.0:0"}, "admin"},
	} {
		err := server.Run(t.Context(), c.cfg)
		var ce *server.ConfigError
		if !errors.As(err, &ce) || ce.Flag != c.flag {
			t.Errorf("%s: %v, want a --%s refusal", c.name, err, c.flag)
		}
	}
}

// TestAdminReload swaps the profile directory through a symlink, as a Kubernetes ConfigMap
// update does: the watcher does not see it, POST /admin/reload does, and says what changed and
// what was refused. The clients file, which is not watched, is reloaded too.
func TestAdminReload(t *testing.T) {
	g := newGate(t)
	root := t.TempDir()
	v1, v2 := filepath.Join(root, "v1"), filepath.Join(root, "v2")
	os.Mkdir(v1, 0o755)
	os.Mkdir(v2, 0o755)
	for _, n := range []string{"petstore", "inventory", "legacy"} {
		writeProfile(t, v1, n, g.URL, "")
	}
	writeProfile(t, v2, "petstore", g.URL, "")                          // unchanged
	writeProfile(t, v2, "inventory", g.URL, "description: restocked\n") // changed
	writeProfile(t, v2, "orders", g.URL, "")                            // added; legacy is removed
	os.WriteFile(filepath.Join(v2, "broken.yaml"), []byte("base_url: "+g.URL+"\nroutes: [\"FETCH /x\"]\n"), 0o644)
	link := filepath.Join(root, "profiles")
	if err := os.Symlink(v1, link); err != nil {
		t.Fatal(err)
	}
	clients := filepath.Join(root, "clients.yaml")
	os.WriteFile(clients, []byte("clients:\n  - name: agent-a\n    token_env: A_TOKEN\n    profiles: [petstore]\n  - name: agent-b\n    token_file: b.token\n    profiles: [\"*\"]\n"), 0o644)
	os.WriteFile(filepath.Join(root, "b.token"), []byte(tokenB+"\n"), 0o600)
	d := start(t, g.upstream, func(c *server.Config) { c.ProfilesDir = link; c.ClientsFile = clients })
	if got := d.status("POST", "/v1/runs", tokenB, run("legacy", "return 1")); got != 200 {
		t.Fatalf("legacy before the swap: %d", got)
	}
	d.adm("POST", "/admin/profiles/legacy/force-open", "", map[string]any{"reason": "retiring"})

	tmp := filepath.Join(root, "profiles.tmp")
	os.Symlink(v2, tmp)
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
	// agent-a loses its token_env client and agent-c arrives; agent-b is unchanged.
	os.WriteFile(clients, []byte("clients:\n  - name: agent-b\n    token_file: b.token\n    profiles: [\"*\"]\n  - name: agent-c\n    token_env: A_TOKEN\n    profiles: [orders]\n"), 0o644)
	resp, b := d.adm("POST", "/admin/reload", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("reload: %d %s", resp.StatusCode, b)
	}
	a := decode[server.ReloadAnswer](t, b)
	names := func(cs []server.ProfileChange) (out []string) {
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	if got := names(a.Profiles.Added); !slices.Equal(got, []string{"orders"}) {
		t.Errorf("added %v: %s", got, b)
	}
	if got := names(a.Profiles.Changed); !slices.Equal(got, []string{"inventory"}) || a.Profiles.Changed[0].Version != 2 {
		t.Errorf("changed %v: %s", got, b)
	}
	if got := names(a.Profiles.Removed); !slices.Equal(got, []string{"legacy"}) {
		t.Errorf("removed %v: %s", got, b)
	}
	if len(a.Profiles.Refused) != 1 || a.Profiles.Refused[0].Name != "broken" || a.Profiles.Refused[0].Field != "routes[0]" {
		t.Errorf("refused: %s", b)
	}
	if len(a.Profiles.Unchanged) != 1 || filepath.Base(a.Profiles.Unchanged[0]) != "petstore.yaml" || !a.Refused {
		t.Errorf("unchanged: %s", b)
	}
	if !slices.Equal(a.Clients.Added, []string{"agent-c"}) || !slices.Equal(a.Clients.Removed, []string{"agent-a"}) || len(a.Clients.Changed) != 0 || a.Clients.Refused != nil {
		t.Errorf("clients: %s", b)
	}
	noSecret(t, "reload answer", string(b))
	if got := d.status("POST", "/v1/runs", tokenA, run("orders", "return 1")); got != 200 {
		t.Errorf("agent-c (A_TOKEN) on orders after reload: %d", got)
	}
	if got := d.status("POST", "/v1/runs", tokenA, run("petstore", "return 1")); got != 403 {
		t.Errorf("A_TOKEN is agent-c now, without petstore: %d", got)
	}
	// The flag outlives its profile's file, and still shows.
	if p := d.adminState("legacy"); p.ForcedOpen == nil || p.Served {
		t.Errorf("legacy after removal: %+v", p)
	}

	// A refused clients file keeps the clients before it.
	os.WriteFile(clients, []byte("clients:\n  - name: agent-b\n    token_env: NOPE\n    profiles: [\"*\"]\n"), 0o644)
	_, b = d.adm("POST", "/admin/reload", "", nil)
	a = decode[server.ReloadAnswer](t, b)
	if a.Clients.Refused == nil || a.Clients.Refused.Field != "clients[0].token_env" || !a.Refused || len(a.Profiles.Changed)+len(a.Profiles.Added) != 0 {
		t.Errorf("refused clients: %s", b)
	}
	if got := d.status("POST", "/v1/runs", tokenA, run("orders", "return 1")); got != 200 {
		t.Errorf("the clients before the refused file are gone: %d", got)
	}
}
