package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// reexecEnv makes the test binary run main(): the serve tests start the real command.
const reexecEnv = "PLIMSOLL_TEST_REEXEC"

// blockingAPI holds every call until release is closed.
type blockingAPI struct {
	*httptest.Server
	arrived atomic.Int64
	release chan struct{}
	once    sync.Once
}

// open lets every held call and every later one through; it may be called more than once.
func (b *blockingAPI) open() { b.once.Do(func() { close(b.release) }) }

func newBlockingAPI(t *testing.T) *blockingAPI {
	b := &blockingAPI{release: make(chan struct{})}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.arrived.Add(1)
		select {
		case <-b.release:
		case <-r.Context().Done():
		}
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(b.Close)
	return b
}

type serveProc struct {
	cmd  *exec.Cmd
	addr string
	done chan error
}

// startServe starts `plimsoll-run serve` as a subprocess and waits until it is ready.
func startServe(t *testing.T, dir string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--listen", "127.0.0.1:0", "--admin", "off",
		"--profiles", filepath.Join(dir, "profiles"), "--audit", filepath.Join(dir, "audit.jsonl")}, args...)...)
	cmd.Env = append(os.Environ(), reexecEnv+"=1", "API_TOKEN=sk-serve-test-secret")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" && l.Addr != "" {
				select {
				case addr <- l.Addr:
				default:
				}
			}
		}
		p.done <- cmd.Wait()
	}()
	select {
	case p.addr = <-addr:
	case err := <-p.done:
		t.Fatalf("serve exited: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("serve did not listen")
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, "readyz")
	return p
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func serveDir(t *testing.T, api string) string {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "profiles"), 0o755)
	os.WriteFile(filepath.Join(dir, "profiles", "api.yaml"), []byte("base_url: "+api+"\ncredential:\n  env: API_TOKEN\nroutes:\n  - GET /*\n"), 0o644)
	return dir
}

// postRuns sends n runs that block upstream; codes gets each answer's status (0: no answer).
func postRuns(addr string, n int) (*sync.WaitGroup, chan int) {
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post("http://"+addr+"/v1/runs", "application/json",
				strings.NewReader(`{"profile":"api","code":"await api.get(\"/hold\"); return 1"}`))
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	return &wg, codes
}

func readAudit(t *testing.T, dir string) []map[string]any {
	b, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestServeSIGTERMDrains: with runs in flight, SIGTERM lets them finish, audits each, exits 0.
func TestServeSIGTERMDrains(t *testing.T) {
	n := 50
	if testing.Short() {
		n = 8
	}
	api := newBlockingAPI(t)
	dir := serveDir(t, api.URL)
	p := startServe(t, dir, "--max-runs", fmt.Sprint(n), "--queue", "8", "--drain", "60s")
	wg, codes := postRuns(p.addr, n)
	waitFor(t, func() bool { return api.arrived.Load() == int64(n) }, "runs in flight")
	t0 := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return true
		}
		resp.Body.Close()
		return resp.StatusCode == 503
	}, "readyz failing")
	api.open()
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("in-flight run answered %d", c)
		}
	}
	if err := <-p.done; err != nil {
		t.Fatalf("exit: %v", err)
	}
	lines := readAudit(t, dir)
	ids := map[any]bool{}
	for _, l := range lines {
		ids[l["run_id"]] = true
	}
	if len(lines) != n || len(ids) != n {
		t.Fatalf("%d audit lines (%d distinct), want %d", len(lines), len(ids), n)
	}
	t.Logf("SIGTERM with %d in flight: %d audit lines, exit 0, drained in %s", n, len(lines), time.Since(t0).Round(time.Millisecond))
}

// TestServeKill9ThenRestart: runs in flight when the daemon is killed are audited as
// interrupted by the next start, once each.
func TestServeKill9ThenRestart(t *testing.T) {
	n := 20
	if testing.Short() {
		n = 5
	}
	api := newBlockingAPI(t)
	dir := serveDir(t, api.URL)
	p := startServe(t, dir, "--max-runs", fmt.Sprint(n))
	wg, _ := postRuns(p.addr, n)
	waitFor(t, func() bool { return api.arrived.Load() == int64(n) }, "runs in flight")
	p.cmd.Process.Kill()
	<-p.done
	wg.Wait()
	api.open()
	if got := len(readAudit(t, dir)); got != 0 {
		t.Fatalf("%d audit lines before the restart", got)
	}
	for round := range 2 { // a second restart must not audit them again
		q := startServe(t, dir)
		q.cmd.Process.Signal(syscall.SIGTERM)
		if err := <-q.done; err != nil {
			t.Fatalf("restart %d: %v", round, err)
		}
		lines := readAudit(t, dir)
		ids := map[any]bool{}
		for _, l := range lines {
			if l["status"] != "interrupted" || l["client"] != "anonymous" || l["profile"] != "api" {
				t.Fatalf("line %v", l)
			}
			ids[l["run_id"]] = true
		}
		if len(lines) != n || len(ids) != n {
			t.Fatalf("restart %d: %d interrupted lines (%d distinct), want %d", round, len(lines), len(ids), n)
		}
	}
	t.Logf("kill -9 with %d in flight, then restart: %d interrupted audit lines, none duplicated", n, n)
}

func TestServeRefusesOpenNonLoopback(t *testing.T) {
	code, _, stderr := invoke(t, "", nil, "serve", "--listen", "0.0.0.0:7070", "--profiles", t.TempDir())
	if code != exitConfig || !strings.Contains(stderr, "--listen") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
