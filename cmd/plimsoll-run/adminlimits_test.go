package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/server"
)

// TestAdminLimitsCommand: `admin limits` shows a profile's concurrency limit once a run called its
// API, `admin retune` changes it live, and a bad retune exits 1 naming the parameter.
func TestAdminLimitsCommand(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "{}") }))
	defer api.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "api.yaml"), []byte("base_url: "+api.URL+"\ncredential:\n  env: API_TOKEN\nroutes:\n  - GET /*\nconcurrency:\n  limit: 4\n  max_queue: 8\n"), 0o644)
	apiAddr, adminAddr := inProcessDaemon(t, server.Config{ProfilesDir: dir,
		Getenv: func(k string) string { return map[string]string{"API_TOKEN": "sk-limits-test"}[k] }})
	admin := func(args ...string) (int, string, string) {
		return invoke(t, "", nil, append(append([]string{"admin"}, args...), "--admin", adminAddr)...)
	}
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + adminAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	}, "readyz")

	code, out, _ := admin("limits")
	if code != 0 || !strings.Contains(out, "no concurrency limits in use") {
		t.Fatalf("before any call: %d %q", code, out)
	}
	resp, err := http.Post("http://"+apiAddr+"/v1/runs", "application/json",
		strings.NewReader(`{"profile":"api","code":"const r = await api.get(\"/x\"); return r.status"}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("run: %v %v", err, resp)
	}
	resp.Body.Close()

	code, out, _ = admin("limits")
	if code != 0 || !strings.Contains(out, "api ") || !regexpRow(out, "api", "fixed", "4", "4-4", "0", "0/8") {
		t.Fatalf("limits: %d\n%s", code, out)
	}
	code, out, errs := admin("retune", "api", "--limit", "gradient2", "--max", "16", "--queue-timeout", "500ms")
	if code != 0 || !regexpRow(out, "api", "gradient2", "4", "2-16") || !strings.HasSuffix(strings.TrimSpace(out), "true") {
		t.Fatalf("retune: %d\n%s%s", code, out, errs)
	}
	if code, _, errs := admin("retune", "api", "--max", "1"); code != 1 || !strings.Contains(errs, "400 max: must be from min (2) to 4096, not 1") {
		t.Fatalf("bad retune: %d %s", code, errs)
	}
	code, out, errs = admin("force-open", "api", "--route", "GET /*", "--reason", "INC-5")
	if code != 0 || !strings.HasPrefix(out, "api GET /* forced open since ") || !strings.Contains(out, ": INC-5\n") {
		t.Fatalf("force-open --route: %d %s%s", code, out, errs)
	}
	if code, _, errs := admin("force-open", "api", "--route", "POST /x", "--reason", "r"); code != 1 || !strings.Contains(errs, "400 route: \"POST /x\" is not one of the profile's routes: GET /*") {
		t.Fatalf("force-open of an ungranted route: %d %s", code, errs)
	}
	code, out, _ = admin("clear", "api", "--route", "GET /*")
	if code != 0 || !strings.HasPrefix(out, "api GET /* cleared (was forced open since ") {
		t.Fatalf("clear --route: %d %s", code, out)
	}
	if code, _, errs := admin("retune"); code != 2 || !strings.Contains(errs, "a profile NAME is required") {
		t.Fatalf("retune without a name: %d %s", code, errs)
	}
}

// regexpRow says whether a line of out starts with the given columns, in order.
func regexpRow(out string, cols ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(cols)+1 && f[0] == cols[0] && strings.Join(f[2:len(cols)+1], " ") == strings.Join(cols[1:], " ") {
			return true
		}
	}
	return false
}

// `profiles check` shows a profile's concurrency block, and names a bad one.
func TestProfilesCheckConcurrency(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "api.yaml", "base_url: http://127.0.0.1:1\nroutes: [GET /x]\nconcurrency:\n  limit: aimd\n  max: 32\n")
	code, stdout, _ := invoke(t, "", nil, "profiles", "check", "--profiles", dir)
	if code != 0 || !strings.Contains(stdout, "concurrency limit aimd, min 2, max 32, max_queue 128, queue_timeout 2s, per_route false") {
		t.Fatalf("%d %s", code, stdout)
	}
	writeFile(t, dir, "api.yaml", "base_url: http://127.0.0.1:1\nroutes: [GET /x]\nconcurrency:\n  limit: 8\n  min: 2\n")
	code, stdout, _ = invoke(t, "", nil, "profiles", "check", "--profiles", dir)
	if code != 2 || !strings.Contains(stdout, "concurrency.limit: a fixed limit (8) has no min or max") {
		t.Fatalf("%d %s", code, stdout)
	}
}
