package server_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/kneeapi"
	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server"
)

// TestFleetAPILimitLoad is the shared API limit's bounded load program (issue 27): three real
// daemons on loopback, each with a third of the runs, call one loopback API with a knee of 16
// (base 40 ms) through a gradient2 limit from min 2, for 8 s. Each round runs the baseline (the
// three daemons without --fleet) and the fleet (the same with --fleet on an embedded NATS),
// alternating, and prints the API's in-flight p99 and goodput after settling. It runs with
// PLIMSOLL_FIGURES=1 (PLIMSOLL_LIMIT_RUNS, PLIMSOLL_LIMIT_SECONDS and PLIMSOLL_FLEET_ROUNDS change
// its size; PLIMSOLL_FLEET_TRACE=1 logs every limit twice a second): the figures depend on the
// machine; the test asserts only that every run ended well.
func TestFleetAPILimitLoad(t *testing.T) {
	if os.Getenv("PLIMSOLL_FIGURES") == "" {
		t.Skip("a load program: PLIMSOLL_FIGURES=1 runs it")
	}
	runs, secs, rounds := envInt("PLIMSOLL_LIMIT_RUNS", 120), envInt("PLIMSOLL_LIMIT_SECONDS", 8), envInt("PLIMSOLL_FLEET_ROUNDS", 1)
	for r := range rounds {
		for _, fleet := range []bool{false, true} {
			name := map[bool]string{false: "3 replicas alone", true: "3 replicas, --fleet"}[fleet]
			t.Run(fmt.Sprintf("round%d/%s", r+1, name), func(t *testing.T) {
				st, limits := fleetKneeRound(t, fleet, runs, secs)
				t.Logf("%s, %d runs, %d s, knee 16 at 40 ms (capacity 400/s): after settling upstream in-flight p50 %d, p99 %d, max %d; "+
					"%.0f answers/s = goodput %.1f%%; limits at the end %v", name, runs, secs,
					st.InFlightP50, st.InFlightP99, st.InFlightMax, st.AnswersPerSec, 100*st.Goodput, limits)
			})
		}
	}
}

// fleetKneeRound runs one round: a fresh knee API, three daemons (in one fleet or not), the runs
// split across them; it returns the API's figures after settling and each daemon's limit at the end.
func fleetKneeRound(t *testing.T, inTheFleet bool, runs, secs int) (kneeapi.Stats, []int) {
	api := kneeapi.New(16, 40*time.Millisecond)
	srv := &http.Server{Handler: api}
	ln := listenLoopback(t)
	go srv.Serve(ln)
	defer srv.Close()
	up := newUpstream(t)
	per := runs / 3
	profile := func(c *server.Config) {
		c.MaxRuns, c.Queue = per, per
		body := fmt.Sprintf("base_url: http://%s/api\ncredential:\n  env: UPSTREAM_TOKEN\nroutes:\n  - GET /*\n"+
			"budget:\n  calls: 100000\nlimits:\n  max_host_calls: 100000\n  run_timeout: %ds\n  memory: 32MiB\n"+
			"concurrency:\n  limit: gradient2\n  min: 2\n  max: 64\n  max_queue: %d\n  queue_timeout: 2s\n", ln.Addr(), secs+30, per)
		os.WriteFile(filepath.Join(c.ProfilesDir, "knee.yaml"), []byte(body), 0o644)
	}
	var ds []*daemon
	if inTheFleet {
		ns := natstest.Start(t)
		for _, name := range []string{"a", "b", "c"} {
			ds = append(ds, start(t, up, profile, inFleet(ns, name)))
		}
	} else {
		for range 3 {
			ds = append(ds, start(t, up, profile))
		}
	}
	tool := fmt.Sprintf(`const end = Date.now() + %d; let ok = 0, shed = 0;
		while (Date.now() < end) { const r = await api.get("/work"); if (r.status === 200) ok++; else { shed++; await sleep(50); } }
		return [ok, shed];`, secs*1000)
	begin := api.Since()
	var wg sync.WaitGroup
	for i := range per * 3 {
		d := ds[i%3]
		crit := []string{"critical", "normal", "sheddable"}[i/3%3]
		wg.Go(func() {
			resp, b := d.do("POST", "/v1/runs", tokenB, run("knee", tool), "Plimsoll-Criticality", crit)
			if resp.StatusCode != 200 || decode[answer](t, b).Status != "ok" {
				t.Errorf("a run on %s: %d %s", d.api, resp.StatusCode, b)
			}
		})
	}
	stopTrace := make(chan struct{})
	if os.Getenv("PLIMSOLL_FLEET_TRACE") != "" {
		go traceLimits(t, api, ds, begin, stopTrace)
	}
	wg.Wait()
	close(stopTrace)
	end := api.Since()
	var limits []int
	for _, d := range ds {
		l, _ := kneeLimit(t, d)
		limits = append(limits, l)
	}
	return api.Window(begin+(end-begin)/3, end-2*time.Second), limits
}

// traceLimits logs the API's in-flight and each daemon's limit every 500 ms until stop.
func traceLimits(t *testing.T, api *kneeapi.API, ds []*daemon, begin time.Duration, stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
		line := fmt.Sprintf("%5.1fs api %2d:", (api.Since() - begin).Seconds(), api.InFlight())
		for _, d := range ds {
			_, b := d.adm("GET", "/admin/limits?profile=knee", "", nil)
			if la := decode[server.LimitsAnswer](t, b); len(la.Limits) == 1 {
				l := la.Limits[0]
				line += fmt.Sprintf(" [limit %d learned %d fleet %d share %.2f in %d queued %d baseline %.0fms]",
					l.Limit, l.Learned, l.FleetLimit, l.Share, l.InFlight, l.Queued, l.BaselineMs)
			}
		}
		t.Log(line)
	}
}

// kneeLimit reads d's limit of the profile "knee".
func kneeLimit(t *testing.T, d *daemon) (limit int, share float64) {
	resp, b := d.adm("GET", "/admin/limits?profile=knee", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /admin/limits: %d %s", resp.StatusCode, b)
	}
	la := decode[server.LimitsAnswer](t, b)
	if len(la.Limits) != 1 {
		return 0, 0
	}
	return la.Limits[0].Limit, la.Limits[0].Share
}
