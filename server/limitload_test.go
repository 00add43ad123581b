package server_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/kneeapi"
	"github.com/plimsoll/plimsoll/server"
)

// TestAPILimitLoad is the API limit's bounded load program (issue 26), against the real daemon
// over HTTP: 200 concurrent runs each call a loopback API with a knee of 16 (base 40 ms, so it
// serves 400 calls/s at best, and slower per call above 16 in flight) for 8 s, through a profile
// with a gradient2 limit from min 2. It prints the figures: upstream in-flight p99 after
// convergence, goodput vs the knee's capacity, time for the limit to reach the knee, sheds.
// It runs with PLIMSOLL_FIGURES=1 (PLIMSOLL_LIMIT_RUNS and PLIMSOLL_LIMIT_SECONDS change its
// size): the figures depend on the machine; the test asserts only that every run ended.
func TestAPILimitLoad(t *testing.T) {
	if os.Getenv("PLIMSOLL_FIGURES") == "" {
		t.Skip("a load program: PLIMSOLL_FIGURES=1 runs it")
	}
	runs, secs := envInt("PLIMSOLL_LIMIT_RUNS", 200), envInt("PLIMSOLL_LIMIT_SECONDS", 8)
	api := kneeapi.New(16, 40*time.Millisecond)
	srv := &http.Server{Handler: api}
	ln := listenLoopback(t)
	go srv.Serve(ln)
	defer srv.Close()
	up := newUpstream(t)
	d := start(t, up, func(c *server.Config) {
		c.MaxRuns, c.Queue = runs, runs
		body := fmt.Sprintf("base_url: http://%s/api\ncredential:\n  env: UPSTREAM_TOKEN\nroutes:\n  - GET /*\n"+
			"budget:\n  calls: 100000\nlimits:\n  max_host_calls: 100000\n  run_timeout: %ds\n  memory: 32MiB\n"+
			"concurrency:\n  limit: gradient2\n  min: 2\n  max: 64\n  max_queue: %d\n  queue_timeout: 2s\n", ln.Addr(), secs+30, runs)
		os.WriteFile(filepath.Join(c.ProfilesDir, "knee.yaml"), []byte(body), 0o644)
	})
	tool := fmt.Sprintf(`const end = Date.now() + %d; let ok = 0, shed = 0;
		while (Date.now() < end) { const r = await api.get("/work"); if (r.status === 200) ok++; else { shed++; await sleep(50); } }
		return [ok, shed];`, secs*1000)

	type point struct {
		at    time.Duration
		limit int
	}
	var (
		mu     sync.Mutex
		points []point
		stop   = make(chan struct{})
	)
	go func() { // the limit over time, from the admin plane
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			_, b := d.send(d.admin, "GET", "/admin/limits?profile=knee", "", nil)
			var la limitsAnswer
			if err := json.Unmarshal(b, &la); err == nil && len(la.Limits) == 1 {
				mu.Lock()
				points = append(points, point{api.Since(), la.Limits[0].Limit})
				mu.Unlock()
			}
		}
	}()
	begin := api.Since()
	var wg sync.WaitGroup
	codes := make(chan int, runs)
	for i := range runs {
		crit := []string{"critical", "normal", "sheddable"}[i%3]
		wg.Go(func() {
			resp, b := d.do("POST", "/v1/runs", tokenB, run("knee", tool), "Plimsoll-Criticality", crit)
			if resp.StatusCode == 200 && decode[answer](t, b).Status != "ok" {
				t.Errorf("a run failed: %s", b)
			}
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(stop)
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("a run was answered %d", c)
		}
	}
	end := api.Since()
	mu.Lock()
	defer mu.Unlock()
	converged := time.Duration(-1)
	for _, p := range points {
		if p.limit >= 16 {
			converged = p.at - begin
			break
		}
	}
	from := begin + (end-begin)/3 // after the limit settled
	st := api.Window(from, end-2*time.Second)
	_, b := d.send(d.admin, "GET", "/admin/limits?profile=knee", "", nil)
	var chart strings.Builder
	for i, p := range points {
		if i%5 == 0 {
			fmt.Fprintf(&chart, "\n  %5.1fs limit %3d %s", (p.at - begin).Seconds(), p.limit, strings.Repeat("#", p.limit))
		}
	}
	t.Logf("%d runs, %d s, knee 16 at 40 ms (capacity 400/s): limit reached the knee after %s; after settling: "+
		"upstream in-flight p50 %d, p99 %d, max %d; %.0f answers/s = goodput %.1f%%; limits: %s%s",
		runs, secs, converged, st.InFlightP50, st.InFlightP99, st.InFlightMax, st.AnswersPerSec, 100*st.Goodput, b, chart.String())
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func listenLoopback(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
