package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/server"
)

const (
	upstreamSecret = "sk-upstream-secret-4242"
	tokenA         = "token-agent-a-0123456789"
	tokenB         = "token-agent-b-9876543210"
)

// upstream is a loopback API whose /block path holds each call until released.
type upstream struct {
	*httptest.Server
	arrived atomic.Int64
	release chan struct{}
	once    sync.Once
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+upstreamSecret {
			http.Error(w, "no credential", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/api/block" {
			u.arrived.Add(1)
			select {
			case <-u.release:
			case <-r.Context().Done():
			}
		}
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	t.Cleanup(func() { u.open(); u.Close() })
	return u
}

func (u *upstream) open() { u.once.Do(func() { close(u.release) }) }

// waitArrived polls until n calls are held at /block.
func (u *upstream) waitArrived(t *testing.T, n int64) {
	t.Helper()
	eventually(t, func() bool { return u.arrived.Load() >= n }, "%d calls held upstream (have %d)", n, u.arrived.Load())
}

// eventually polls cond with a bounded deadline; the deadline is a failure bound, not a timing
// assertion.
func eventually(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for "+format, args...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func writeProfile(t *testing.T, dir, name, baseURL string, extra string) {
	t.Helper()
	body := fmt.Sprintf("base_url: %s/api\ncredential:\n  env: UPSTREAM_TOKEN\n  scheme: Bearer\nroutes:\n  - GET /*\n  - GET /pets/*\n%s", baseURL, extra)
	if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// daemon is one in-process daemon on loopback ephemeral ports.
type daemon struct {
	t         *testing.T
	api       string
	admin     string
	dir       string
	auditFile string
	logs      *syncBuffer
	stop      context.CancelFunc
	done      chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type option func(*server.Config)

// start runs a daemon with profiles petstore and inventory on up, and two clients (agent-a:
// petstore; agent-b: all) unless an option changes it.
func start(t *testing.T, up *upstream, opts ...option) *daemon {
	t.Helper()
	dir := t.TempDir()
	profiles := filepath.Join(dir, "profiles")
	os.Mkdir(profiles, 0o755)
	writeProfile(t, profiles, "petstore", up.URL, "description: the pet store\n")
	writeProfile(t, profiles, "inventory", up.URL, "")
	clients := filepath.Join(dir, "clients.yaml")
	os.WriteFile(clients, []byte("clients:\n  - name: agent-a\n    token_env: A_TOKEN\n    profiles: [petstore]\n  - name: agent-b\n    token_file: b.token\n    profiles: [\"*\"]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.token"), []byte(tokenB+"\n"), 0o600)
	d := &daemon{t: t, dir: profiles, auditFile: filepath.Join(dir, "audit.jsonl"), logs: &syncBuffer{}, done: make(chan error, 1)}
	addrs := make(chan [2]string, 1)
	cfg := server.Config{Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", ProfilesDir: profiles, ClientsFile: clients,
		AuditFile: d.auditFile, MaxRuns: 4, Queue: 8, Drain: 30 * time.Second, CacheDir: testcache.Dir(),
		Getenv: envOf(map[string]string{"A_TOKEN": tokenA, "UPSTREAM_TOKEN": upstreamSecret}),
		Logger: slog.New(slog.NewJSONHandler(d.logs, nil)),
		Ready:  func(api, admin string) { addrs <- [2]string{api, admin} }}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.stop = cancel
	go func() { d.done <- server.Run(ctx, cfg) }()
	select {
	case a := <-addrs:
		d.api, d.admin = "http://"+a[0], "http://"+a[1]
	case err := <-d.done:
		t.Fatalf("daemon did not start: %v", err)
	}
	t.Cleanup(func() { up.open(); d.shutdown() })
	eventually(t, func() bool { return d.status("GET", "/readyz", "", nil) == 200 }, "readyz")
	return d
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// shutdown drains the daemon and returns Run's error.
func (d *daemon) shutdown() error {
	d.stop()
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(2 * time.Minute):
		d.t.Fatal("daemon did not stop")
		return nil
	}
}

// do sends a request to the API listener; body "" sends none; hdr adds headers ("Authorization" a
// token alone).
func (d *daemon) do(method, path, token string, body any, hdr ...string) (*http.Response, []byte) {
	d.t.Helper()
	return d.send(d.api, method, path, token, body, hdr...)
}

// send is do against base, the API or the admin listener.
func (d *daemon) send(base, method, path, token string, body any, hdr ...string) (*http.Response, []byte) {
	d.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (d *daemon) status(method, path, token string, body any, hdr ...string) int {
	resp, _ := d.do(method, path, token, body, hdr...)
	return resp.StatusCode
}

func run(profile, code string) map[string]any {
	return map[string]any{"profile": profile, "code": code}
}

// answer is POST /v1/runs's 200 body.
type answer struct {
	RunID  string            `json:"run_id"`
	Status string            `json:"status"`
	Output json.RawMessage   `json:"output"`
	Error  string            `json:"error"`
	Log    string            `json:"log"`
	Trace  []json.RawMessage `json:"trace"`
	Audit  map[string]any    `json:"audit"`
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// auditLines reads the audit file's lines as maps.
func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, decode[map[string]any](t, []byte(l)))
		}
	}
	return out
}

// noSecret fails if the upstream credential or a client token shows anywhere in s.
func noSecret(t *testing.T, where, s string) {
	t.Helper()
	for _, secret := range []string{upstreamSecret, tokenA, tokenB} {
		if strings.Contains(s, secret) {
			t.Fatalf("%s shows a secret", where)
		}
	}
}

const blockTool = `const r = await api.get("/block"); return r.json();`
