package host

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// numericWorkloads are the interpreter-bound workloads of BenchmarkWorkload.
var numericWorkloads = []struct{ name, script string }{
	{"numeric_loop_1e7", workloadNumeric},
	{"fib_27", workloadFib},
	{"sieve_2e6", workloadSieve},
}

// BenchmarkNumericCPU measures the interpreter-bound workloads (numeric loop 1e7, fib(27), sieve
// 2e6) by process CPU time, not wall time: on a shared machine a run's wall time includes the
// time it waits for a core, its CPU time does not. Each of b.N rounds runs the tool once through
// the host (QuickJS-ng in wazero, the whole run) and once in native goja, in alternating order,
// each after a full GC; it reports the medians of each side and of the per-round ratios.
//
// With PLIMSOLL_NATIVE_QJS naming the engine built natively (`go run ./guests/internal/wasmbuild
// -native PATH`), each round also runs the tool there, in a child process that reports its own
// CPU time, and the benchmark reports that and the engine-in-wazero to native ratio.
//
//	go test -run '^$' -bench NumericCPU -benchtime 5x ./host/
func BenchmarkNumericCPU(b *testing.B) {
	if processCPU() == 0 {
		b.Skip("no process CPU time on this platform")
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	b.Cleanup(srv.Close)
	p := profile(b, srv.URL, "")
	rt := shared(b)
	for _, wl := range numericWorkloads {
		b.Run(wl.name, func(b *testing.B) {
			tool := JSTool("workload.js", wl.script)
			first := rt.Run(context.Background(), tool, p, []byte(`null`))
			require.NoError(b, first.Err, "%s", first.Log)
			require.JSONEq(b, gojaRun(b, wl.script, []byte(`null`), ""), string(first.Output), "goja and the engine agree")

			inEngine := func() { require.NoError(b, rt.Run(context.Background(), tool, p, []byte(`null`)).Err) }
			inGoja := func() { gojaRun(b, wl.script, []byte(`null`), "") }
			nativeRun := nativeEngine(b, wl.script)
			var qjs, goja, qjsWall, gojaWall, ratios, native, nativeRatios []float64
			b.ResetTimer()
			for i := range b.N {
				var q, g, qw, gw time.Duration
				if i%2 == 0 { // neither side always runs first, after the other's garbage
					q, qw = cpuOf(inEngine)
					g, gw = cpuOf(inGoja)
				} else {
					g, gw = cpuOf(inGoja)
					q, qw = cpuOf(inEngine)
				}
				qjs, goja = append(qjs, ms(q)), append(goja, ms(g))
				qjsWall, gojaWall = append(qjsWall, ms(qw)), append(gojaWall, ms(gw))
				ratios = append(ratios, float64(q)/float64(g))
				if nativeRun != nil {
					n := nativeRun()
					native, nativeRatios = append(native, n), append(nativeRatios, ms(q)/n)
				}
			}
			b.StopTimer()
			b.ReportMetric(medianOf(qjs), "qjs-cpu-ms")
			b.ReportMetric(medianOf(goja), "goja-cpu-ms")
			b.ReportMetric(medianOf(qjsWall), "qjs-wall-ms")
			b.ReportMetric(medianOf(gojaWall), "goja-wall-ms")
			b.ReportMetric(medianOf(ratios), "qjs/goja-cpu")
			b.ReportMetric(slices.Min(ratios), "min-ratio")
			b.ReportMetric(slices.Max(ratios), "max-ratio")
			if nativeRun != nil {
				b.ReportMetric(medianOf(native), "native-cpu-ms")
				b.ReportMetric(medianOf(nativeRatios), "qjs/native-cpu")
			}
		})
	}
}

// nativeEngine returns a function that runs script once in the natively built engine named by
// PLIMSOLL_NATIVE_QJS and returns its CPU ms, after checking that it gives goja's result; nil
// when the variable is unset.
func nativeEngine(b *testing.B, script string) func() float64 {
	prog := os.Getenv("PLIMSOLL_NATIVE_QJS")
	if prog == "" {
		return nil
	}
	path := filepath.Join(b.TempDir(), "tool.js")
	require.NoError(b, os.WriteFile(path, []byte(script), 0o644))
	want := gojaRun(b, script, []byte(`null`), "")
	return func() float64 {
		out, err := exec.Command(prog, path, "1").Output()
		require.NoError(b, err, "%s", out)
		result, cpu, ok := strings.Cut(strings.TrimSpace(string(out)), "\t")
		require.True(b, ok, "%s prints the result, a tab and the CPU ms: %q", prog, out)
		require.JSONEq(b, want, result, "goja and the native engine agree")
		n, err := strconv.ParseFloat(cpu, 64)
		require.NoError(b, err)
		return n
	}
}

// cpuOf is the process CPU time and the wall time f takes, after a full GC so no earlier
// garbage is collected during it.
func cpuOf(f func()) (cpu, wall time.Duration) {
	runtime.GC()
	c0, t0 := processCPU(), time.Now()
	f()
	return processCPU() - c0, time.Since(t0)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func medianOf(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}

// BenchmarkNumericEngine runs only the engine's side of BenchmarkNumericCPU, for a profiler to
// watch (RATIONALE.md, "where a numeric loop's time goes", shows how).
//
//	go test -run '^$' -bench 'NumericEngine/fib' -benchtime 20x ./host/
func BenchmarkNumericEngine(b *testing.B) {
	srv := httptest.NewServer(http.NotFoundHandler())
	b.Cleanup(srv.Close)
	p := profile(b, srv.URL, "")
	rt := shared(b)
	for _, wl := range numericWorkloads {
		b.Run(wl.name, func(b *testing.B) {
			tool := JSTool("workload.js", wl.script)
			for range b.N {
				res := rt.Run(context.Background(), tool, p, []byte(`null`))
				require.NoError(b, res.Err, "%s", res.Log)
			}
		})
	}
}
