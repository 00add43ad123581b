package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/server"
)

// TestAdminCommand drives `plimsoll-run admin` against an in-process daemon with an admin token,
// while one run is held upstream: see it, force its profile open, clear, reload.
func TestAdminCommand(t *testing.T) {
	const adminToken = "admin-cli-token-0123456789"
	api := newBlockingAPI(t)
	dir := serveDir(t, api.URL)
	apiAddr, adminAddr := inProcessDaemon(t, server.Config{ProfilesDir: filepath.Join(dir, "profiles"), AdminTokenEnv: "ADM",
		Getenv: func(k string) string { return map[string]string{"API_TOKEN": "sk-admin-test", "ADM": adminToken}[k] }})
	t.Cleanup(api.open) // before the daemon stops: its drain waits for the held run
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + adminAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	}, "readyz")
	var wg sync.WaitGroup
	wg.Go(func() {
		resp, err := http.Post("http://"+apiAddr+"/v1/runs", "application/json",
			strings.NewReader(`{"profile":"api","code":"const r = await api.get(\"/held\"); return r.status"}`))
		if err == nil {
			resp.Body.Close()
		}
	})
	waitFor(t, func() bool { return api.arrived.Load() == 1 }, "the run held upstream")

	tok := map[string]string{"ADM": adminToken}
	admin := func(args ...string) (int, string, string) {
		return invoke(t, "", tok, append(append([]string{"admin"}, args...), "--admin", adminAddr, "--token-env", "ADM")...)
	}
	code, out, errs := admin("state")
	if code != 0 || !strings.Contains(out, "api  version 1") || !strings.Contains(out, "runs: 1 live; since start ok 0") ||
		!strings.Contains(out, "anonymous") || !strings.Contains(out, " closed\n") {
		t.Fatalf("state: %d\n%s%s", code, out, errs)
	}
	code, out, errs = admin("force-open", "api", "--reason", "INC-3 api is down")
	if code != 0 || !strings.Contains(out, "api forced open since") || !strings.Contains(out, "1 live run(s)") || !strings.Contains(out, "lost when the daemon restarts") {
		t.Fatalf("force-open: %d\n%s%s", code, out, errs)
	}
	code, out, _ = admin("state", "--profile", "api")
	if code != 0 || !strings.Contains(out, "FORCED OPEN since") || !strings.Contains(out, ": INC-3 api is down") {
		t.Fatalf("state while forced:\n%s", out)
	}
	code, out, _ = admin("state", "--json")
	var st server.AdminState
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Profiles) != 1 || st.Profiles[0].ForcedOpen == nil ||
		st.Profiles[0].ForcedOpen.Reason != "INC-3 api is down" || st.Profiles[0].Live[0].CallsInFlight != 1 {
		t.Fatalf("state --json: %d %s", code, out)
	}
	code, out, _ = admin("clear", "api")
	if code != 0 || !strings.Contains(out, "api cleared (was forced open since") {
		t.Fatalf("clear: %d %s", code, out)
	}
	code, out, _ = admin("reload")
	if code != 0 || !strings.Contains(out, "1 profile file(s) unchanged") || !strings.Contains(out, "open mode") {
		t.Fatalf("reload: %d %s", code, out)
	}
	code, out, _ = admin("reload", "--json")
	if code != 0 || !json.Valid([]byte(out)) {
		t.Fatalf("reload --json: %d %s", code, out)
	}

	// Refusals: no token, a missing reason, an unknown profile, no daemon.
	if code, _, errs := invoke(t, "", nil, "admin", "state", "--admin", adminAddr); code != 1 || !strings.Contains(errs, "401") ||
		!strings.Contains(errs, "set $PLIMSOLL_ADMIN_TOKEN to it (or name another variable with --token-env NAME)") {
		t.Errorf("no token: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "", map[string]string{"PLIMSOLL_ADMIN_TOKEN": "wrong"}, "admin", "state", "--admin", adminAddr); code != 1 ||
		!strings.Contains(errs, "refused the token in $PLIMSOLL_ADMIN_TOKEN") {
		t.Errorf("a wrong token: %d %s", code, errs)
	}
	if code, _, errs := admin("force-open", "api"); code != 2 || !strings.Contains(errs, "--reason is required") {
		t.Errorf("no reason: %d %s", code, errs)
	}
	if code, _, errs := admin("force-open", "nope", "--reason", "x"); code != 1 || !strings.Contains(errs, "404 name: no profile nope") {
		t.Errorf("unknown profile: %d %s", code, errs)
	}
	if code, _, errs := admin("frobnicate"); code != 2 || !strings.Contains(errs, "unknown subcommand") {
		t.Errorf("unknown subcommand: %d %s", code, errs)
	}
	if code, _, errs := invoke(t, "", nil, "admin", "state", "--admin", "127.0.0.1:1"); code != 2 || !strings.Contains(errs, "cannot be reached") {
		t.Errorf("no daemon: %d %s", code, errs)
	}
	if code, out, _ := invoke(t, "", nil, "--help"); code != 0 || !strings.Contains(out, "plimsoll-run admin state|force-open") {
		t.Errorf("help: %d %s", code, out)
	}
	api.open()
	wg.Wait()
}

// inProcessDaemon runs server.Run in the test with cfg on loopback listeners, the shared compile
// cache and no audit or log output, and returns its API and admin addresses once it listens. It
// stops at cleanup.
func inProcessDaemon(t *testing.T, cfg server.Config) (apiAddr, adminAddr string) {
	t.Helper()
	cfg.Listen, cfg.Admin, cfg.CacheDir = "127.0.0.1:0", "127.0.0.1:0", testcache.Dir()
	cfg.AuditOut, cfg.Logger = io.Discard, slog.New(slog.NewJSONHandler(io.Discard, nil))
	addrs := make(chan [2]string, 1)
	cfg.Ready = func(a, b string) { addrs <- [2]string{a, b} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg) }()
	select {
	case a := <-addrs:
		apiAddr, adminAddr = a[0], a[1]
	case err := <-done:
		t.Fatalf("daemon: %v", err)
	}
	t.Cleanup(func() { cancel(); <-done })
	return apiAddr, adminAddr
}
