package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeKill9ThenRestartPastOversizeLines: a kill -9 with runs in flight, then an audit file
// holding a 20 MB line (as a client could once make) and a corrupt one: the restart reads past
// them, still starts, and audits every interrupted run once.
func TestServeKill9ThenRestartPastOversizeLines(t *testing.T) {
	n := 4
	api := newBlockingAPI(t)
	dir := serveDir(t, api.URL)
	p := startServe(t, dir)
	wg, _ := postRuns(p.addr, n)
	waitFor(t, func() bool { return api.arrived.Load() == int64(n) }, "runs in flight")
	p.cmd.Process.Kill()
	<-p.done
	wg.Wait()
	close(api.release)

	auditPath := filepath.Join(dir, "audit.jsonl")
	f, err := os.OpenFile(auditPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `{"run_id":"older-huge","status":"error","mcp_client":"%s"}`+"\n{torn\n", strings.Repeat("A", 20<<20))
	f.Close()

	q := startServe(t, dir)
	q.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-q.done; err != nil {
		t.Fatalf("restart: %v", err)
	}
	b, _ := os.ReadFile(auditPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	interrupted := map[string]bool{}
	for _, l := range lines[2:] {
		if !strings.Contains(l, `"status":"interrupted"`) {
			t.Fatalf("line %.200s", l)
		}
		interrupted[l[:40]] = true
	}
	if len(lines) != 2+n || len(interrupted) != n {
		t.Fatalf("%d lines after the two planted ones (%d distinct), want %d interrupted", len(lines)-2, len(interrupted), n)
	}
}

// TestServeSecondSIGTERMEndsAtOnce: the first SIGTERM starts a drain that would wait for a held
// run (--drain 10m); a second SIGTERM ends the process. SIGTERM is sent until the process
// exits: the verdict is how it exited (by the signal, not a clean drain), not how fast.
func TestServeSecondSIGTERMEndsAtOnce(t *testing.T) {
	api := newBlockingAPI(t)
	dir := serveDir(t, api.URL)
	p := startServe(t, dir, "--drain", "10m")
	wg, _ := postRuns(p.addr, 1)
	waitFor(t, func() bool { return api.arrived.Load() == 1 }, "a run in flight")
	var err error
	for exited := false; !exited; {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-p.done:
			exited = true
		case <-time.After(50 * time.Millisecond): // the next signal; not a deadline
		}
	}
	close(api.release)
	wg.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("exit: %v, want killed by the second SIGTERM", err)
	}
}
