package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// BenchmarkHelloVsNode is the warm `plimsoll-run run hello.js` against node running the same
// tool body (wrapped in an async function, its result printed as JSON), in the same run.
//
//	go test -run '^$' -bench HelloVsNode -benchtime 10x ./cmd/plimsoll-run/
func BenchmarkHelloVsNode(b *testing.B) {
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("node is not installed")
	}
	dir := b.TempDir()
	bin := buildCLI(b, dir)
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if err := os.WriteFile(filepath.Join(dir, "hello.yaml"), []byte("base_url: "+srv.URL+"\nroutes: [GET /x]\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	src, err := os.ReadFile("../../guests/examples/hello.js")
	if err != nil {
		b.Fatal(err)
	}
	nodeProg := filepath.Join(dir, "hello-node.js")
	if err := os.WriteFile(nodeProg, []byte("(async function (input) {\n"+string(src)+"\n})(null).then((v) => console.log(JSON.stringify(v)));\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	cache := os.Getenv("PLIMSOLL_CACHE_DIR")
	plimsoll := func() {
		cmd := exec.Command(bin, "run", "--profiles", dir, "--profile", "hello", "../../guests/examples/hello.js")
		cmd.Env = append(os.Environ(), "PLIMSOLL_CACHE_DIR="+cache)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	nodeRun := func() {
		if out, err := exec.Command(node, nodeProg).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	plimsoll()
	nodeRun()
	var p, n []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		plimsoll()
		p = append(p, time.Since(t0))
		t0 = time.Now()
		nodeRun()
		n = append(n, time.Since(t0))
	}
	b.StopTimer()
	pm, nm := medianMs(p), medianMs(n)
	b.ReportMetric(pm, "plimsoll-ms")
	b.ReportMetric(nm, "node-ms")
	b.ReportMetric(pm/nm, "plimsoll/node")
}

// BenchmarkFirstRunEmptyCache is `plimsoll-run run hello.js` with an empty cache directory: the
// engine is decompressed and compiled, and the cache filled. It reports the wall time and the
// cache's size afterwards.
//
//	go test -run '^$' -bench FirstRunEmptyCache -benchtime 3x ./cmd/plimsoll-run/
func BenchmarkFirstRunEmptyCache(b *testing.B) {
	dir := b.TempDir()
	bin := buildCLI(b, dir)
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if err := os.WriteFile(filepath.Join(dir, "hello.yaml"), []byte("base_url: "+srv.URL+"\nroutes: [GET /x]\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	var d []time.Duration
	var size int64
	b.ResetTimer()
	for i := range b.N {
		cache := filepath.Join(dir, "cache"+strconv.Itoa(i))
		t0 := time.Now()
		cmd := exec.Command(bin, "run", "--profiles", dir, "--profile", "hello", "../../guests/examples/hello.js")
		cmd.Env = append(os.Environ(), "PLIMSOLL_CACHE_DIR="+cache)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		d = append(d, time.Since(t0))
		size = 0
		filepath.Walk(cache, func(_ string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				size += info.Size()
			}
			return nil
		})
	}
	b.StopTimer()
	b.ReportMetric(medianMs(d), "ms/first-run")
	b.ReportMetric(float64(size)/(1<<20), "cache-MiB")
}

func buildCLI(b *testing.B, dir string) string {
	bin := filepath.Join(dir, "plimsoll-run")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatal(err)
	}
	return bin
}

func medianMs(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds()) / 1000
}
