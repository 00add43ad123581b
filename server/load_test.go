package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/profiles"
	"github.com/plimsoll/plimsoll/server"
)

// hammer sends total requests from clients goroutines and counts answers by status.
func hammer(t *testing.T, d *daemon, total, clients int, body func(i int) (string, string)) map[int]int {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var mu sync.Mutex
	codes := map[int]int{}
	next := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				b, crit := body(i)
				req, _ := http.NewRequest("POST", d.api+"/v1/runs", strings.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+tokenA)
				req.Header.Set(server.HeaderCriticality, crit)
				code := 0
				if resp, err := hc.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	for i := range total {
		next <- i
	}
	close(next)
	wg.Wait()
	return codes
}

// TestLoadEveryRequestAnswered: 2,000 requests from 200 clients against --max-runs 32
// --queue 64 (400 from 40 with -short): each is a 200 or a 429, and the audit file has exactly
// one line per 200.
func TestLoadEveryRequestAnswered(t *testing.T) {
	total, clients := 2000, 200
	if testing.Short() {
		total, clients = 400, 40
	}
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.MaxRuns, c.Queue = 32, 64 })
	codes := hammer(t, d, total, clients, func(int) (string, string) {
		return `{"profile":"petstore","code":"await api.get(\"/pets/1\"); return 1"}`, "normal"
	})
	if codes[200]+codes[429] != total {
		t.Fatalf("answers %v: want only 200 and 429", codes)
	}
	lines := auditLines(t, d.auditFile)
	ids := map[any]bool{}
	for _, l := range lines {
		ids[l["run_id"]] = true
	}
	if len(lines) != codes[200] || len(ids) != len(lines) {
		t.Fatalf("%d audit lines (%d distinct) for %d runs answered 200", len(lines), len(ids), codes[200])
	}
	rss := maxRSS()
	t.Logf("%d requests from %d clients, --max-runs 32 --queue 64: %d×200 %d×429, %d audit lines, none duplicated; max RSS %s",
		total, clients, codes[200], codes[429], len(lines), profiles.FormatSize(rss))
	if rss > 3<<30 {
		t.Fatalf("max RSS %s", profiles.FormatSize(rss))
	}
}

// TestMixedCriticalityOverload: a burst of sheddable, normal and critical runs against a full
// daemon (2 live, 8 waiting, held upstream): no critical run is shed.
func TestMixedCriticalityOverload(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) { c.MaxRuns, c.Queue = 2, 8 })
	tiers := []string{"sheddable", "normal", "sheddable", "critical", "sheddable"}
	var mu sync.Mutex
	shed := map[string]int{}
	var wg sync.WaitGroup
	for i := range 40 { // 8 critical among 40: exactly the queue's size
		wg.Add(1)
		go func() {
			defer wg.Done()
			tier := tiers[i%len(tiers)]
			resp, _ := d.do("POST", "/v1/runs", tokenA, run("petstore", blockTool), server.HeaderCriticality, tier)
			if resp.StatusCode == 429 {
				mu.Lock()
				shed[tier]++
				mu.Unlock()
			}
		}()
	}
	eventually(t, func() bool {
		_, m := d.do("GET", "/metrics", "", nil)
		return strings.Contains(string(m), "plimsoll_queue_depth 8") && up.arrived.Load() >= 2 && total(shed, &mu) >= 30
	}, "the burst settled (shed so far %v)", shed)
	up.open()
	wg.Wait()
	if shed["critical"] != 0 {
		t.Fatalf("critical runs shed: %v", shed)
	}
	t.Logf("mixed criticality overload (2 live, 8 queued, 40 arrivals): shed %v, 0 critical", shed)
}

func total(m map[string]int, mu *sync.Mutex) int {
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// maxRSS is the process's peak resident set (VmHWM), 0 where /proc is missing.
func maxRSS() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// TestFigures measures trivial JS runs through POST /v1/runs against the library in the same
// process. Run: PLIMSOLL_FIGURES=1 go test -run TestFigures -v ./server (PLIMSOLL_FIGURES=audit
// with the synced audit file and journal).
func TestFigures(t *testing.T) {
	if os.Getenv("PLIMSOLL_FIGURES") == "" {
		t.Skip("set PLIMSOLL_FIGURES=1")
	}
	up := newUpstream(t)
	synced := os.Getenv("PLIMSOLL_FIGURES") == "audit" // with the synced audit file and journal
	d := start(t, up, func(c *server.Config) {
		c.MaxRuns, c.Queue = 32, 64
		if !synced {
			c.AuditFile, c.AuditOut = "", io.Discard
		}
	})
	rt, err := host.New(context.Background(), host.Options{CacheDir: testcache.Dir(), MaxConcurrent: 32, PoolSize: 2,
		Getenv: envOf(map[string]string{"UPSTREAM_TOKEN": upstreamSecret})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	p, err := profiles.Load(d.dir, "petstore")
	if err != nil {
		t.Fatal(err)
	}
	tool := host.JSTool("t.js", "return 1")
	lib := func() { rt.Run(context.Background(), tool, p, nil) }
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	body := `{"profile":"petstore","code":"return 1"}`
	daemonRun := func() {
		req, _ := http.NewRequest("POST", d.api+"/v1/runs", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tokenA)
		resp, err := hc.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("daemon run: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range 50 {
		lib()
		daemonRun()
	}
	const seq, par, workers = 1000, 3000, 8
	lp, dp := p50(seq, lib), p50(seq, daemonRun)
	lr, lcpu := rateCPU(par, workers, lib)
	dr, dcpu := rateCPU(par, workers, daemonRun)
	t.Logf("p50 latency, trivial JS, sequential (%d runs): library %s, daemon %s, added %s", seq, lp, dp, dp-lp)
	t.Logf("throughput, %d workers (%d runs): library %.0f runs/s, daemon %.0f runs/s (%.0f%%)", workers, par, lr, dr, 100*dr/lr)
	t.Logf("CPU per run (this process: for the daemon, its client's HTTP too): library %s, daemon %s (%.2f×)",
		lcpu, dcpu, float64(dcpu)/float64(lcpu))
}

// rateCPU is rate, and the process's CPU time per run while it ran.
func rateCPU(n, workers int, f func()) (float64, time.Duration) {
	cpu0 := processCPU()
	r := rate(n, workers, f)
	return r, (processCPU() - cpu0) / time.Duration(n)
}

func p50(n int, f func()) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		t0 := time.Now()
		f()
		ds[i] = time.Since(t0)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[n/2]
}

func rate(n, workers int, f func()) float64 {
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	t0 := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				f()
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(t0).Seconds()
}
