package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/internal/kneeapi"
	"github.com/plimsoll/plimsoll/profiles"
)

// `plimsoll-run demo --runs N` (issue 26): N runs at once call one loopback API that serves 16
// calls at once in 40 ms each and slows in proportion above that; the profile has a gradient2
// concurrency limit from min 2. The chart shows the limit learning the knee, and the calls at the
// API, every 250 ms.

const (
	demoKnee = 16
	demoBase = 40 * time.Millisecond
)

func demoRuns(ctx context.Context, f demoFlags, e env) int {
	api := kneeapi.New(demoKnee, demoBase)
	srv, baseURL, err := serveLoopback(api)
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: %v\n", err)
		return exitConfig
	}
	defer srv.Close()
	p, err := kneeProfile(baseURL, f.runs, f.seconds)
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: %v\n", err)
		return exitConfig
	}
	getenv := demoGetenv(e)
	rt, err := host.New(ctx, host.Options{Getenv: getenv, MaxConcurrent: f.runs})
	if err != nil {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: %v\n", err)
		return exitConfig
	}
	defer rt.Close(context.Background())
	fmt.Fprintf(e.stdout, "plimsoll demo: %d runs call one API for %d s. It serves %d calls at once in %s each and slows in proportion above that (at best %d calls/s).\n"+
		"The profile's limit is gradient2 from min 2; # is the limit, | the calls at the API.\n\n",
		f.runs, f.seconds, demoKnee, demoBase, int(float64(demoKnee)/demoBase.Seconds()))
	tool := host.JSTool("knee.js", fmt.Sprintf(`const end = Date.now() + %d; let ok = 0;
		while (Date.now() < end) { const r = await api.get("/work"); if (r.status === 200) ok++; else await sleep(50); }
		return ok;`, f.seconds*1000))
	var wg sync.WaitGroup
	failed := make(chan error, f.runs)
	for i := range f.runs {
		opts := host.RunOptions{Criticality: bulkhead.Tiers[i%3]}
		wg.Go(func() {
			if res := rt.RunWith(ctx, tool, p, nil, opts); res.Err != nil {
				failed <- res.Err
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	begin := api.Since()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
			st := rt.Limits().State()
			if len(st) == 0 {
				continue // no call yet: the limit is made at the first
			}
			lim := st[0].Limit
			fmt.Fprintf(e.stdout, "%5.2fs limit %3d %s\n", (api.Since() - begin).Seconds(), lim, bar(lim, api.InFlight()))
		}
	}
	end := api.Since()
	st := api.Window(begin+(end-begin)/3, end)
	fmt.Fprintf(e.stdout, "\nafter the first third: calls at the API p50 %d, p99 %d; %.0f answers/s, %.0f%% of what the API can serve\n",
		st.InFlightP50, st.InFlightP99, st.AnswersPerSec, 100*st.Goodput)
	if s := rt.Limits().State(); len(s) > 0 {
		fmt.Fprintf(e.stdout, "limit %d, latency baseline %.1f ms; shed critical %d, normal %d, sheddable %d\n",
			s[0].Limit, s[0].BaselineMs, s[0].Shed["critical"], s[0].Shed["normal"], s[0].Shed["sheddable"])
	}
	close(failed)
	if err, bad := <-failed; bad {
		fmt.Fprintf(e.stderr, "plimsoll-run demo: a run failed: %v\n", err)
		return exitTool
	}
	return exitOK
}

// bar draws the limit as # and the calls at the API as a | at their count.
func bar(limit, inflight int) string {
	b := []rune(strings.Repeat("#", limit) + strings.Repeat(" ", max(0, inflight-limit)))
	if inflight > 0 {
		b[inflight-1] = '|'
	}
	return string(b)
}

// kneeProfile is the demo's profile with a concurrency block, loaded like any profile.
func kneeProfile(baseURL string, runs, seconds int) (*profiles.Profile, error) {
	dir, err := os.MkdirTemp("", "plimsoll-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	text := fmt.Sprintf(`base_url: %s/v1
credential:
  env: %s
  scheme: Bearer
routes:
  - GET /work
budget:
  calls: 100000
limits:
  max_host_calls: 100000
  run_timeout: %ds
  memory: 32MiB
concurrency:
  limit: gradient2
  min: 2
  max: 64
  max_queue: %d
  queue_timeout: 2s
`, baseURL, demoTokenEnv, seconds+30, runs)
	path := filepath.Join(dir, "knee.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return nil, err
	}
	return profiles.LoadFile(path)
}
