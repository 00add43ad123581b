package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestLoadgen runs the program end to end with small counts: child processes for the library,
// the daemon and a base daemon (the same build, as -base), the ratio lines, and the profiles of
// both sides. Set PLIMSOLL_LOADGEN=1 (it builds and starts processes, so go test ./... skips it).
func TestLoadgen(t *testing.T) {
	if os.Getenv("PLIMSOLL_LOADGEN") == "" {
		t.Skip("set PLIMSOLL_LOADGEN=1")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "loadgen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v: %s", err, out)
	}
	out, err := exec.Command(bin, "-runs", "40", "-warm", "5", "-rounds", "2", "-base", bin, "-profile", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{
		`daemon/library runs/s [0-9.]+×.*CPU/run [0-9.]+×`,
		`daemon/base daemon CPU/run [0-9.]+×, runs/s [0-9.]+×`,
		`daemon [0-9]+ runs/s, [0-9]+ µs CPU/run, [1-9][0-9]* allocs/run`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	for _, f := range []string{"daemon.cpu.pprof", "daemon.allocs.pprof", "library.cpu.pprof", "library.allocs.pprof"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v", f, err)
		}
	}
}
