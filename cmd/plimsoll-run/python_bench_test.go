package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkPythonFirstRunEmptyCache is `plimsoll-run run hello.py` with an empty cache directory:
// the interpreter is decompressed, compiled and started, and the cache filled. It reports the
// wall time and the cache's size afterwards.
//
//	go test -run '^$' -bench PythonFirstRunEmptyCache -benchtime 3x ./cmd/plimsoll-run/
func BenchmarkPythonFirstRunEmptyCache(b *testing.B) {
	dir, bin := pythonBenchSetup(b)
	var d []time.Duration
	var size int64
	b.ResetTimer()
	for i := range b.N {
		cache := filepath.Join(dir, "cache"+strconv.Itoa(i))
		d = append(d, timeRun(b, bin, dir, cache))
		size = dirSize(cache)
	}
	b.StopTimer()
	b.ReportMetric(medianMs(d), "ms/first-run")
	b.ReportMetric(float64(size)/(1<<20), "cache-MiB")
}

// BenchmarkPythonWholeProcess is `plimsoll-run run hello.py` with a warm cache, the whole process,
// against `python3 -c "import json, re, datetime"`, alternated in one run.
//
//	go test -run '^$' -bench PythonWholeProcess -benchtime 10x ./cmd/plimsoll-run/
func BenchmarkPythonWholeProcess(b *testing.B) {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("no python3 to compare with")
	}
	dir, bin := pythonBenchSetup(b)
	cache := filepath.Join(dir, "cache")
	timeRun(b, bin, dir, cache) // fill the cache outside the timing
	var ours, native []time.Duration
	b.ResetTimer()
	for range b.N {
		ours = append(ours, timeRun(b, bin, dir, cache))
		t0 := time.Now()
		if out, err := exec.Command(py, "-c", "import json, re, datetime").CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		native = append(native, time.Since(t0))
	}
	b.StopTimer()
	o, n := medianMs(ours), medianMs(native)
	b.ReportMetric(o, "plimsoll-ms")
	b.ReportMetric(n, "python3-ms")
	b.ReportMetric(o/n, "plimsoll/python3")
}

func pythonBenchSetup(b *testing.B) (dir, bin string) {
	dir = b.TempDir()
	bin = buildCLI(b, dir)
	srv := httptest.NewServer(http.NotFoundHandler())
	b.Cleanup(srv.Close)
	if err := os.WriteFile(filepath.Join(dir, "hello.yaml"), []byte("base_url: "+srv.URL+"\nroutes: [GET /x]\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	return dir, bin
}

func timeRun(b *testing.B, bin, dir, cache string) time.Duration {
	t0 := time.Now()
	cmd := exec.Command(bin, "run", "--profiles", dir, "--profile", "hello", "../../guests/examples/hello.py")
	cmd.Env = append(os.Environ(), "PLIMSOLL_CACHE_DIR="+cache)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	return time.Since(t0)
}

func dirSize(dir string) (size int64) {
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			size += info.Size()
		}
		return nil
	})
	return size
}
