package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/server"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// BenchmarkFleetRunOverhead is the figure "per-run overhead with --fleet vs without" (issue 27,
// goal ≤ 3%): two daemons on loopback, one alone and one in a fleet on an embedded NATS (flags
// watched, heartbeats every second, the profile's API limit shared), run the same 3-call JS tool
// against one loopback API. Each iteration runs it once on each, the order alternating;
// fleet/alone is the ratio of their median run times (medians: the shared machine's stalls hit
// single runs, and would swamp a mean).
func BenchmarkFleetRunOverhead(b *testing.B) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) }))
	defer api.Close()
	ns := natstest.Start(b)
	alone := benchDaemon(b, api.URL, nil)
	inFleet := benchDaemon(b, api.URL, &fleet.Options{URL: ns.ClientURL(), Name: "bench", Replica: "r1"})
	body, _ := json.Marshal(run("bench", `for (let i = 0; i < 3; i++) await api.get("/item-" + i); return 1`))
	runOn := func(base string) time.Duration {
		t0 := time.Now()
		resp, err := http.Post(base+"/v1/runs", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(out, []byte(`"output":1`)) {
			b.Fatalf("run on %s: %d %s", base, resp.StatusCode, out)
		}
		return time.Since(t0)
	}
	for range 20 { // warm both: compiled engines, connections
		runOn(alone)
		runOn(inFleet)
	}
	tAlone, tFleet := make([]time.Duration, b.N), make([]time.Duration, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			tAlone[i] = runOn(alone)
			tFleet[i] = runOn(inFleet)
		} else {
			tFleet[i] = runOn(inFleet)
			tAlone[i] = runOn(alone)
		}
	}
	ma, mf := medianDuration(tAlone), medianDuration(tFleet)
	b.ReportMetric(float64(ma.Microseconds()), "alone-p50-µs")
	b.ReportMetric(float64(mf.Microseconds()), "fleet-p50-µs")
	b.ReportMetric(float64(mf)/float64(ma), "fleet/alone")
}

func medianDuration(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// benchDaemon starts a daemon in open mode (loopback, no clients) with one profile "bench" on
// base, in the fleet fl if it is not nil, and returns its API's URL.
func benchDaemon(b *testing.B, base string, fl *fleet.Options) string {
	b.Helper()
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "bench.yaml"), []byte("base_url: "+base+"/v1\nroutes:\n  - GET /*\nconcurrency:\n  limit: gradient2\n  min: 2\n  max: 64\n"), 0o600)
	ready := make(chan string, 1)
	cfg := server.Config{Listen: "127.0.0.1:0", Admin: "off", ProfilesDir: dir, CacheDir: testcache.Dir(),
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), AuditOut: io.Discard, Fleet: fl,
		Ready: func(api, _ string) { ready <- "http://" + api }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg) }()
	b.Cleanup(func() { cancel(); <-done })
	select {
	case u := <-ready:
		return u
	case err := <-done:
		b.Fatalf("daemon did not start: %v", err)
		return ""
	}
}
