package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/profiles"
)

// BenchmarkRunTracing is the figure "a run's cost with tracing on (spans exported) vs off": a
// 10-call JS tool against a loopback API, run as the daemon runs it (beginRun, RunWith, end).
// off is the daemon without OTEL_*; on exports every span to an OTLP receiver on loopback.
// The two alternate in one loop; on/off is the ratio.
func BenchmarkRunTracing(b *testing.B) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) }))
	defer api.Close()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer receiver.Close()

	dir := b.TempDir()
	path := filepath.Join(dir, "bench.yaml")
	os.WriteFile(path, []byte("base_url: "+api.URL+"/v1\nroutes:\n  - GET /*\npropagate_trace: true\n"), 0o600)
	p, err := profiles.LoadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rt, err := host.New(ctx, host.Options{CacheDir: testcache.Dir()})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	tool := host.JSTool("ten.js", `for (let i = 0; i < 10; i++) await api.get("/item-" + i); return "ok";`)

	on, err := newTracing(ctx, func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return receiver.URL
		}
		return ""
	})
	if err != nil || on == nil {
		b.Fatalf("tracing: %v", err)
	}
	defer on.shutdown(ctx)
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	runOnce := func(s *Server) {
		opts := host.RunOptions{RunID: "bench"}
		span := s.beginRun(&opts, parent, p.Name, "bench", "sha256:0")
		res := rt.RunWith(ctx, tool, p, nil, opts)
		span.end(res)
		if res.Err != nil || res.Audit.Forwarded != 10 {
			b.Fatalf("run: %v %+v", res.Err, res.Audit)
		}
	}
	off, traced := &Server{}, &Server{tracing: on}
	// Off and on alternate, so that the shared machine's load falls on both alike.
	var offNs, onNs time.Duration
	for b.Loop() {
		t0 := time.Now()
		runOnce(off)
		t1 := time.Now()
		runOnce(traced)
		offNs, onNs = offNs+t1.Sub(t0), onNs+time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(offNs.Nanoseconds())/n, "off_ns/run")
	b.ReportMetric(float64(onNs.Nanoseconds())/n, "on_ns/run")
	b.ReportMetric(float64(onNs)/float64(offNs), "on/off")
}

// BenchmarkSpansOf10CallRun is tracing's own cost per run, without the run: the run span and ten
// call spans made and handed to the batch exporter (a loopback receiver). Against
// BenchmarkRunTracing's off_ns/run it gives the overhead when the machine is too noisy for the
// on/off ratio to resolve it.
func BenchmarkSpansOf10CallRun(b *testing.B) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer receiver.Close()
	ctx := context.Background()
	on, err := newTracing(ctx, func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return receiver.URL
		}
		return ""
	})
	if err != nil || on == nil {
		b.Fatalf("tracing: %v", err)
	}
	defer on.shutdown(ctx)
	res := host.Result{Audit: broker.Audit{RunID: "bench", Status: broker.StatusOK, DurationMs: 3}}
	for i := range 10 {
		res.Trace = append(res.Trace, broker.TraceEntry{Seq: i + 1, TMs: int64(i), Method: "GET", Route: "GET /*",
			Outcome: broker.Forwarded, Status: 200, UpstreamStatus: 200, LatencyMs: 0.2})
	}
	s := &Server{tracing: on}
	for b.Loop() {
		opts := host.RunOptions{RunID: "bench"}
		s.beginRun(&opts, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "p", "bench", "sha256:0").end(res)
	}
}
