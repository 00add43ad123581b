package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/plimsoll/plimsoll/server"
)

func TestAuth(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	body := run("petstore", `return 1`)
	cases := []struct {
		name, token, profile string
		want                 int
	}{
		{"no token", "", "petstore", 401},
		{"wrong token", "token-nobody-000000000000", "petstore", 401},
		{"right token", tokenA, "petstore", 200},
		{"forbidden profile", tokenA, "inventory", 403},
		{"star client", tokenB, "inventory", 200},
	}
	for _, c := range cases {
		body["profile"] = c.profile
		resp, b := d.do("POST", "/v1/runs", c.token, body)
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.want, b)
		}
		if c.want == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: no WWW-Authenticate", c.name)
		}
		noSecret(t, c.name, string(b))
	}
	if got := d.status("GET", "/v1/profiles", "", nil); got != 401 {
		t.Errorf("GET /v1/profiles without a token: %d", got)
	}
}

func TestRunAnswerAndStatuses(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.MaxBodyBytes = 4096 })
	resp, b := d.do("POST", "/v1/runs", tokenA, map[string]any{"profile": "petstore", "input": map[string]any{"n": 2},
		"code": `console.log("hi"); const r = await api.get("/pets/" + input.n); return {got: r.json().path};`})
	if resp.StatusCode != 200 {
		t.Fatalf("run: %d %s", resp.StatusCode, b)
	}
	a := decode[answer](t, b)
	if a.Status != "ok" || string(a.Output) != `{"got":"/api/pets/2"}` || a.Log != "hi\n" || len(a.Trace) != 1 || a.Audit["client"] != "agent-a" || a.Audit["run_id"] != a.RunID {
		t.Fatalf("answer: %s", b)
	}
	noSecret(t, "answer", string(b))

	// A tool that throws is still a 200, with its status and error.
	resp, b = d.do("POST", "/v1/runs", tokenA, run("petstore", `throw new Error("boom")`))
	if a := decode[answer](t, b); resp.StatusCode != 200 || a.Status != "error" || !strings.Contains(a.Error, "boom") {
		t.Fatalf("failing tool: %d %s", resp.StatusCode, b)
	}

	refusals := []struct {
		name  string
		body  any
		hdr   []string
		code  int
		field string
	}{
		{"no profile", map[string]any{"code": "return 1"}, nil, 400, "profile"},
		{"no code", map[string]any{"profile": "petstore"}, nil, 400, "code"},
		{"both code and wasm", map[string]any{"profile": "petstore", "code": "1", "wasm_base64": "AA=="}, nil, 400, "code"},
		{"unknown field", map[string]any{"profile": "petstore", "code": "1", "cod": "x"}, nil, 400, "cod"},
		{"bad timeout", map[string]any{"profile": "petstore", "code": "1", "timeout": "soon"}, nil, 400, "timeout"},
		{"profile not a string", map[string]any{"profile": 7, "code": "1"}, nil, 400, "profile"},
		{"bad base64", map[string]any{"profile": "petstore", "wasm_base64": "%%%"}, nil, 400, "wasm_base64"},
		{"not JSON", "{", nil, 400, ""},
		{"bad criticality", run("petstore", "1"), []string{server.HeaderCriticality, "urgent"}, 400, server.HeaderCriticality},
		{"unknown profile", map[string]any{"profile": "nope", "code": "1"}, nil, 403, "profile"}, // agent-a may not use it
		{"too big", run("petstore", strings.Repeat("x", 5000)), nil, 413, "body"},
		{"content type", run("petstore", "1"), []string{"Content-Type", "text/plain"}, 415, "Content-Type"},
	}
	for _, r := range refusals {
		resp, b := d.do("POST", "/v1/runs", tokenA, r.body, r.hdr...)
		e := decode[struct {
			Error, Field string
		}](t, b)
		if resp.StatusCode != r.code || e.Field != r.field || e.Error == "" {
			t.Errorf("%s: %d %s, want %d naming %q", r.name, resp.StatusCode, b, r.code, r.field)
		}
	}
	if got := d.status("POST", "/v1/runs", tokenB, map[string]any{"profile": "nope", "code": "1"}); got != 404 {
		t.Errorf("unknown profile for a * client: %d", got)
	}
}

func TestStreaming(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	resp, b := d.do("POST", "/v1/runs", tokenA, run("petstore", `console.log("one"); await api.get("/a"); console.log("two"); return 3;`),
		"Accept", server.MediaNDJSON)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != server.MediaNDJSON {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var types []string
	var last map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		last = decode[map[string]any](t, sc.Bytes())
		types = append(types, last["type"].(string))
	}
	if strings.Join(types, ",") != "log,call,log,result" {
		t.Fatalf("stream types %v:\n%s", types, b)
	}
	if last["status"] != "ok" || last["output"] != float64(3) || last["run_id"] == "" {
		t.Fatalf("result line: %v", last)
	}
	noSecret(t, "stream", string(b))
}

func TestProfilesAndRecentRuns(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	_, b := d.do("GET", "/v1/profiles", tokenA, nil)
	list := decode[struct {
		Profiles []struct {
			Name, Description, HealthCheck string
			Routes                         []string
		} `json:"profiles"`
	}](t, b)
	if len(list.Profiles) != 1 || list.Profiles[0].Name != "petstore" || list.Profiles[0].Description != "the pet store" || list.Profiles[0].Routes[0] != "GET /*" {
		t.Fatalf("agent-a's profiles: %s", b)
	}
	if _, b := d.do("GET", "/v1/profiles", tokenB, nil); strings.Count(string(b), `"name"`) != 2 {
		t.Fatalf("agent-b's profiles: %s", b)
	}
	for path, want := range map[string]int{"/v1/profiles/petstore": 200, "/v1/profiles/inventory": 403, "/v1/profiles/nope": 403} {
		if got := d.status("GET", path, tokenA, nil); got != want {
			t.Errorf("%s: %d want %d", path, got, want)
		}
	}
	if got := d.status("GET", "/v1/profiles/nope", tokenB, nil); got != 404 {
		t.Errorf("unknown profile: %d", got)
	}
	_, b = d.do("POST", "/v1/runs", tokenA, run("petstore", `return "kept"`))
	id := decode[answer](t, b).RunID
	if resp, b := d.do("GET", "/v1/runs/"+id, tokenA, nil); resp.StatusCode != 200 || decode[answer](t, b).RunID != id {
		t.Fatalf("owner's GET: %d %s", resp.StatusCode, b)
	}
	if got := d.status("GET", "/v1/runs/"+id, tokenB, nil); got != 404 {
		t.Errorf("another client's GET: %d", got)
	}
}

func TestOpenModeOnlyOnLoopback(t *testing.T) {
	err := server.Run(t.Context(), server.Config{Listen: "0.0.0.0:0", ProfilesDir: t.TempDir()})
	var ce *server.ConfigError
	if !errors.As(err, &ce) || ce.Flag != "listen" {
		t.Fatalf("want a --listen refusal, got %v", err)
	}
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.ClientsFile = "" })
	if got := d.status("POST", "/v1/runs", "", run("inventory", "return 1")); got != 200 {
		t.Fatalf("open mode run: %d", got)
	}
	if !strings.Contains(d.logs.String(), "open mode") {
		t.Fatal("open mode is not logged")
	}
}

func TestReload(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	// A new file is served.
	writeProfile(t, d.dir, "orders", up.URL, "")
	eventually(t, func() bool { return d.status("GET", "/v1/profiles/orders", tokenB, nil) == 200 }, "orders served")
	// An invalid edit keeps the last good version and shows the field on the admin plane.
	os.WriteFile(filepath.Join(d.dir, "orders.yaml"), []byte("base_url: "+up.URL+"\nroutes: [\"FETCH /x\"]\n"), 0o644)
	var state struct {
		Files []server.ProfileFile `json:"files"`
	}
	eventually(t, func() bool {
		resp, err := http.Get(d.admin + "/admin/profiles")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&state)
		for _, f := range state.Files {
			if f.Name == "orders" && f.Error != "" {
				return true
			}
		}
		return false
	}, "the refusal on the admin plane")
	for _, f := range state.Files {
		if f.Name == "orders" && (f.Field != "routes[0]" || f.Version < 1) {
			t.Fatalf("refused file state: %+v", f)
		}
	}
	if got := d.status("POST", "/v1/runs", tokenB, run("orders", "return 1")); got != 200 {
		t.Fatalf("the last good orders is not served: %d", got)
	}
	if !strings.Contains(d.logs.String(), `"field":"`) {
		t.Fatal("the refusal is not logged with its field")
	}
	// A valid edit is a new version; a removed file is no longer served.
	writeProfile(t, d.dir, "orders", up.URL, "description: v2\n")
	eventually(t, func() bool {
		_, b := d.do("GET", "/v1/profiles/orders", tokenB, nil)
		return strings.Contains(string(b), `"v2"`)
	}, "orders v2")
	os.Remove(filepath.Join(d.dir, "orders.yaml"))
	eventually(t, func() bool { return d.status("GET", "/v1/profiles/orders", tokenB, nil) == 404 }, "orders removed")
}

func TestMetrics(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	_, b := d.do("POST", "/v1/runs", tokenA, run("petstore", `await api.get("/pets/1"); return 1`))
	id := decode[answer](t, b).RunID
	_, m := d.adm("GET", "/metrics", "", nil) // the per-profile series are on the admin listener
	for _, want := range []string{`plimsoll_runs_total{profile="petstore",status="ok"}`,
		`plimsoll_host_calls_total{outcome="forwarded",profile="petstore",route="GET /pets/*"}`,
		`plimsoll_http_requests_total{code="200",route="POST /v1/runs"}`, "plimsoll_run_duration_seconds_bucket",
		"plimsoll_queue_wait_seconds_bucket", "plimsoll_runs_live", "plimsoll_queue_depth"} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(m), id) || strings.Contains(string(m), "/pets/1") {
		t.Error("a run id or raw path is a label")
	}
	noSecret(t, "metrics", string(m))
	noSecret(t, "logs", d.logs.String())
}

// TestAdmissionAndCriticality fills the one slot and the one queue place with runs held by the
// upstream, then checks who is shed.
func TestAdmissionAndCriticality(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.MaxRuns, c.Queue = 1, 1 })
	post := func(crit string) chan *http.Response {
		ch := make(chan *http.Response, 1)
		go func() {
			resp, _ := d.do("POST", "/v1/runs", tokenA, run("petstore", blockTool), server.HeaderCriticality, crit)
			ch <- resp
		}()
		return ch
	}
	depth := func(n int) func() bool {
		return func() bool {
			_, m := d.do("GET", "/metrics", "", nil)
			return strings.Contains(string(m), "plimsoll_queue_depth "+string(rune('0'+n)))
		}
	}
	live := post("normal")
	up.waitArrived(t, 1)
	sheddable := post("sheddable")
	eventually(t, depth(1), "one waiting")
	if resp, _ := d.do("POST", "/v1/runs", tokenA, run("petstore", "return 1"), server.HeaderCriticality, "sheddable"); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("an equal arrival at a full queue: %d", resp.StatusCode)
	}
	critical := post("critical")
	if resp := <-sheddable; resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the displaced sheddable run: %d", resp.StatusCode)
	}
	if resp, _ := d.do("POST", "/v1/runs", tokenA, run("petstore", "return 1"), server.HeaderCriticality, "normal"); resp.StatusCode != 429 {
		t.Fatalf("a normal arrival behind a waiting critical: %d", resp.StatusCode)
	}
	up.open()
	if r := <-live; r.StatusCode != 200 {
		t.Fatalf("live run: %d", r.StatusCode)
	}
	if r := <-critical; r.StatusCode != 200 {
		t.Fatalf("critical run: %d", r.StatusCode)
	}
	_, m := d.do("GET", "/metrics", "", nil)
	if !strings.Contains(string(m), `plimsoll_daemon_sheds_total{criticality="sheddable",reason="displaced"} 1`) {
		t.Error("the displacement is not counted")
	}
}

// TestDrainInProcess: in-flight runs finish and are audited; new runs get 503; readyz fails.
func TestDrainInProcess(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.MaxRuns, c.Queue = 8, 8 })
	const n = 6
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); codes <- d.status("POST", "/v1/runs", tokenA, run("petstore", blockTool)) }()
	}
	up.waitArrived(t, n)
	stopped := make(chan error, 1)
	go func() { stopped <- d.shutdown() }()
	eventually(t, func() bool { return d.status("GET", "/readyz", "", nil) == 503 }, "readyz failing")
	resp, _ := d.do("POST", "/v1/runs", tokenA, run("petstore", "return 1"))
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a new run while draining: %d", resp.StatusCode)
	}
	up.open()
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("in-flight run: %d", c)
		}
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	lines := auditLines(t, d.auditFile)
	if len(lines) != n {
		t.Fatalf("%d audit lines, want %d", len(lines), n)
	}
	if j, _ := os.ReadFile(d.auditFile + ".journal"); len(j) != 0 {
		t.Fatalf("journal not compacted: %s", j)
	}
}

// TestDrainDeadlineCancels: runs still in flight at the drain deadline are cancelled and audited.
func TestDrainDeadlineCancels(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.Drain = 1 })
	codes := make(chan int, 2)
	for range 2 {
		go func() { codes <- d.status("POST", "/v1/runs", tokenA, run("petstore", blockTool)) }()
	}
	up.waitArrived(t, 2)
	if err := d.shutdown(); err != nil {
		t.Fatal(err)
	}
	lines := auditLines(t, d.auditFile)
	if len(lines) != 2 || lines[0]["status"] == "ok" {
		t.Fatalf("audit lines after a cancelled drain: %v", lines)
	}
}
