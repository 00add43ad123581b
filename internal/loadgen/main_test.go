package main

import (
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// TestLoadgen runs the program end to end with small counts: two child processes, a daemon on
// loopback and the library, and a ratio line. Set PLIMSOLL_LOADGEN=1 (it builds and starts
// processes, so go test ./... skips it).
func TestLoadgen(t *testing.T) {
	if os.Getenv("PLIMSOLL_LOADGEN") == "" {
		t.Skip("set PLIMSOLL_LOADGEN=1")
	}
	out, err := exec.Command("go", "run", ".", "-runs", "40", "-warm", "5", "-rounds", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !regexp.MustCompile(`daemon/library runs/s [0-9.]+×.*CPU/run [0-9.]+×`).Match(out) {
		t.Fatalf("no ratio line in:\n%s", out)
	}
}
