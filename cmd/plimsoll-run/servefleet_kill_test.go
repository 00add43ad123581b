package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server"
)

// replicaProc is one `plimsoll-run serve --fleet` replica: the built binary in a process of its
// own, so it can be killed with SIGKILL.
type replicaProc struct {
	cmd        *exec.Cmd
	api, admin string
	done       chan error
}

// buildBinary builds plimsoll-run into a temp dir (the build cache makes it a link step).
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "plimsoll-run")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startReplica starts bin as replica name serving dir's profiles in the fleet at url; it returns
// once /readyz answers 200.
func startReplica(t *testing.T, bin, dir, url, name string) *replicaProc {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
		"--profiles", filepath.Join(dir, "profiles"), "--audit", filepath.Join(dir, name+".audit.jsonl"),
		"--fleet", url, "--fleet-name", "kill", "--replica", name)
	cmd.Env = append(os.Environ(), "API_TOKEN=sk-serve-test-secret")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &replicaProc{cmd: cmd, done: make(chan error, 1)}
	addrs := make(chan string, 2) // the API and the admin plane, in either order
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" && l.Addr != "" {
				addrs <- "http://" + l.Addr
			}
		}
		p.done <- cmd.Wait()
	}()
	for _, into := range []*string{&p.api, &p.admin} {
		select {
		case *into = <-addrs:
		case err := <-p.done:
			t.Fatalf("replica %s exited: %v", name, err)
		case <-time.After(2 * time.Minute):
			t.Fatalf("replica %s did not listen", name)
		}
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	if code, _ := httpDo(t, "GET", p.api+"/admin/state", nil); code != http.StatusNotFound { // the admin plane answers it
		p.api, p.admin = p.admin, p.api
	}
	waitFor(t, func() bool { code, _ := httpDo(t, "GET", p.api+"/readyz", nil); return code == 200 }, name+" readyz")
	return p
}

// httpDo sends body as JSON and returns the status and the answer's body (0 if none came).
func httpDo(t *testing.T, method, url string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// runStatus runs one call to profile on p and returns the status the tool saw (503 when shed by
// a forced-open flag) and the flag's reason from the audit, if any.
func (p *replicaProc) runStatus(t *testing.T, profile string) (string, any) {
	t.Helper()
	code, b := httpDo(t, "POST", p.api+"/v1/runs", map[string]any{"profile": profile, "code": `const r = await api.get("/x"); return r.status`})
	var a struct {
		Output json.RawMessage
		Audit  map[string]any
	}
	if code != 200 || json.Unmarshal(b, &a) != nil {
		t.Fatalf("run %s on %s: %d %s", profile, p.api, code, b)
	}
	return string(a.Output), a.Audit["forced_open"]
}

func (p *replicaProc) adminDo(t *testing.T, method, path string, body any) {
	t.Helper()
	if code, b := httpDo(t, method, p.admin+path, body); code != 200 {
		t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
}

func (p *replicaProc) fleet(t *testing.T) server.FleetState {
	t.Helper()
	code, b := httpDo(t, "GET", p.admin+"/admin/state", nil)
	var st server.AdminState
	if code != 200 || json.Unmarshal(b, &st) != nil || st.Fleet == nil {
		t.Fatalf("admin state: %d %s", code, b)
	}
	return *st.Fleet
}

// member finds replica name's instance in f: the live one if live, else any.
func member(f server.FleetState, name string, live bool) (instance string, ok bool) {
	for _, m := range f.Replicas {
		if m.Replica == name && m.Stale != live {
			return m.Instance, true
		}
	}
	return "", false
}

// kill -9 of one replica of three: flags set and cleared while it is dead are exactly what it
// applies before its /readyz says 200, and its dead instance is marked stale, then a live one
// under its name takes its place.
func TestFleetReplicaKilledAndRestarted(t *testing.T) {
	ns := natstest.Start(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) }))
	t.Cleanup(up.Close)
	dir := serveDir(t, up.URL)
	os.WriteFile(filepath.Join(dir, "profiles", "other.yaml"), []byte("base_url: "+up.URL+"\nroutes:\n  - GET /*\n"), 0o644)

	bin := buildBinary(t)
	a := startReplica(t, bin, dir, ns.ClientURL(), "a")
	b := startReplica(t, bin, dir, ns.ClientURL(), "b")
	startReplica(t, bin, dir, ns.ClientURL(), "c")
	a.adminDo(t, "POST", "/admin/profiles/api/force-open", map[string]any{"reason": "INC-1 api down"})
	waitFor(t, func() bool { out, _ := b.runStatus(t, "api"); return out == "503" }, "b sheds api")
	waitFor(t, func() bool { _, ok := member(a.fleet(t), "b", true); return ok }, "a lists b live")
	old, _ := member(a.fleet(t), "b", true)

	if err := b.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	<-b.done
	// While b is dead: api's flag is cleared, a route of other is forced open.
	a.adminDo(t, "DELETE", "/admin/profiles/api/force-open", nil)
	a.adminDo(t, "POST", "/admin/profiles/other/routes/force-open", map[string]any{"route": "GET /*", "reason": "INC-2 other down"})
	waitFor(t, func() bool { inst, ok := member(a.fleet(t), "b", false); return ok && inst == old }, "a marks the killed b stale")

	b2 := startReplica(t, bin, dir, ns.ClientURL(), "b") // returns at the first /readyz 200: no waiting for flags after it
	if out, flag := b2.runStatus(t, "api"); out != "200" || flag != nil {
		t.Fatalf("restarted b was ready with api's cleared flag: status %s, forced_open %v", out, flag)
	}
	if out, flag := b2.runStatus(t, "other"); out != "503" || !strings.Contains(fmt.Sprint(flag), "INC-2") {
		t.Fatalf("restarted b was ready without other's route flag: status %s, forced_open %v", out, flag)
	}
	waitFor(t, func() bool { inst, ok := member(a.fleet(t), "b", true); return ok && inst != old }, "a lists the restarted b live")
	if f := a.fleet(t); f.Warning != "" {
		t.Fatalf("the dead instance counts as a second live b: %s", f.Warning)
	}
}

// --fleet-replicas reaches the fleet's buckets: a count JetStream cannot keep is refused at start.
func TestServeRefusesABadFleetReplicaCount(t *testing.T) {
	code, _, stderr := invoke(t, "", nil, "serve", "--listen", "127.0.0.1:0", "--admin", "off", "--profiles", t.TempDir(),
		"--fleet", "nats://127.0.0.1:1", "--replica", "r1", "--fleet-replicas", "7")
	if code != exitConfig || !strings.Contains(stderr, "--fleet: fleet: bad options: Replicas 7") {
		t.Fatalf("exit %d, stderr %q; want %d naming the replica count", code, stderr, exitConfig)
	}
}
