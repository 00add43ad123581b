package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRunHelloWallTime is `plimsoll-run run hello.js` as a user runs it: a fresh process,
// a warm compilation cache. The binary is built once, outside the timer.
func BenchmarkRunHelloWallTime(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "plimsoll-run")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	text := "base_url: " + srv.URL + "\nroutes: [GET /x]\n"
	if err := os.WriteFile(filepath.Join(dir, "hello.yaml"), []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
	run := func() {
		cmd := exec.Command(bin, "run", "--profiles", dir, "--profile", "hello", "../../guests/examples/hello.js")
		cmd.Env = append(os.Environ(), "PLIMSOLL_CACHE_DIR="+os.Getenv("PLIMSOLL_CACHE_DIR"))
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	run() // warm the cache
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		run()
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/run")
}
