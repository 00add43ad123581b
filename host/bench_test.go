package host

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/guests/testguest"
	"github.com/plimsoll/plimsoll/hostfuncs"
	"github.com/plimsoll/plimsoll/profiles"
)

// fixedBroker answers every call with the same envelope, so a benchmark measures the boundary.
type fixedBroker struct{ answer []byte }

func (f fixedBroker) CallEnvelope(context.Context, []byte) []byte { return f.answer }
func (f fixedBroker) Refuse(string) []byte                        { return f.answer }

// BenchmarkHostCallGo is one host_call round trip from the Go test guest: the guest copies nothing
// but the envelope's address, the host copies the envelope out and the response in. b.N calls run
// in one guest run.
func BenchmarkHostCallGo(b *testing.B) {
	envelope := `{"method":"GET","path":"/admin"}`
	answer := []byte(`{"status":403,"headers":{},"body":""}`)

	b.Run("boundary", func(b *testing.B) {
		rt := newRuntime(b, Options{})
		g, err := rt.compile(context.Background(), testguest.Wasm())
		require.NoError(b, err)
		defer g.mod.Close(context.Background())
		limits := profiles.DefaultLimits
		limits.MaxHostCalls = b.N + 1
		ctx := hostfuncs.WithSession(context.Background(), hostfuncs.NewSession(fixedBroker{answer}, limits))
		inst, err := instantiate(ctx, rt.r, g.mod, 1<<30, nil)
		require.NoError(b, err)
		defer inst.close(ctx)
		require.NoError(b, inst.initialize(ctx))
		inst.port.stdin = bytes.NewReader(guestCmd(map[string]any{"op": "call", "n": b.N, "envelope": envelope, "cap": 4096}))

		b.ResetTimer()
		res, err := inst.mod.ExportedFunction("run").Call(ctx)
		b.StopTimer()
		require.NoError(b, err)
		require.Zero(b, res[0])
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
	})

	b.Run("denied by the broker", func(b *testing.B) {
		ps := newPetstore(b)
		p := profile(b, ps.URL, "limits:\n  max_host_calls: "+strconv.Itoa(b.N+1)+"\n")
		rt := shared(b)
		b.ResetTimer()
		res := rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "call", "n": b.N, "envelope": envelope, "cap": 4096}))
		b.StopTimer()
		require.NoError(b, res.Err)
		require.Equal(b, b.N, res.Audit.Denied)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
	})
}

// BenchmarkHostCallJS is one api.get from a JS tool (envelope built with JSON.stringify, the
// response decoded by the runtime and wrapped), answered cheaply by the broker (a denied route). b.N calls run
// in one tool run. Tools cannot reach the raw-string bridge: the preamble hides it.
func BenchmarkHostCallJS(b *testing.B) {
	ps := newPetstore(b)
	p := profile(b, ps.URL, "limits:\n  max_host_calls: "+strconv.Itoa(b.N+1)+"\n")
	tool := JSTool("calls.js", `for (let i = 0; i < input.n; i++) await api.get("/admin"); return input.n;`)
	rt := shared(b)
	rt.Run(context.Background(), tool, p, []byte(`{"n":1}`)) // compile outside the timing

	b.ResetTimer()
	cpu0 := processCPU()
	res := rt.Run(context.Background(), tool, p, []byte(`{"n":`+strconv.Itoa(b.N)+`}`))
	cpu := processCPU() - cpu0
	b.StopTimer()
	require.NoError(b, res.Err)
	require.Equal(b, b.N, res.Audit.Denied)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/call")
}

// BenchmarkJSRun is the latency of a trivial JS run: with a fresh instance (instantiate and
// restore on the run's path), back to back ("fresh") and after an idle pause ("fresh-idle"),
// and with a pre-initialised one from the pool ("pooled", after the same pause: the pool is
// refilled between runs, outside the timing). A run after a pause starts with cold caches,
// which costs it as much as instantiating does (RATIONALE, "why the pool seemed to buy
// nothing"), so pooled is compared with fresh-idle.
func BenchmarkJSRun(b *testing.B) {
	ps := newPetstore(b)
	p := profile(b, ps.URL, "")
	tool := JSTool("trivial.js", `return 1;`)
	const pause = time.Millisecond // a benchmark may wait; it asserts nothing on time

	for _, mode := range []struct {
		name  string
		pool  int
		pause bool
	}{{"fresh", 0, false}, {"fresh-idle", 0, true}, {"pooled", 4, true}} {
		b.Run(mode.name, func(b *testing.B) {
			rt := newRuntime(b, Options{PoolSize: mode.pool})
			rt.Run(context.Background(), tool, p, nil)
			b.ResetTimer()
			var prepare func()
			if mode.pause {
				prepare = func() {
					for mode.pool > 0 && len(rt.jsEngine().pool.ready) < cap(rt.jsEngine().pool.ready) {
						time.Sleep(time.Millisecond)
					}
					time.Sleep(pause)
				}
			}
			reportMedian(b, prepare, func() {
				if res := rt.Run(context.Background(), tool, p, nil); res.Err != nil {
					b.Fatal(res.Err)
				}
			})
		})
	}
}

// reportMedian runs f b.N times, each after prepare (untimed), and reports the median duration
// of f in ms, and the process's CPU time during f, per run (a wall median on a shared machine
// follows its load; the CPU a run costs less so).
func reportMedian(b *testing.B, prepare, f func()) {
	d := make([]time.Duration, 0, b.N)
	var cpu time.Duration
	for range b.N {
		if prepare != nil {
			b.StopTimer()
			prepare()
			b.StartTimer()
		}
		c0, t0 := processCPU(), time.Now()
		f()
		d = append(d, time.Since(t0))
		cpu += processCPU() - c0
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "ms/run-median")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/run")
}

// BenchmarkJSRunsPerSecond is the throughput of trivial JS runs with fresh instances, from as
// many goroutines as the runtime has concurrent slots.
func BenchmarkJSRunsPerSecond(b *testing.B) {
	ps := newPetstore(b)
	p := profile(b, ps.URL, "")
	tool := JSTool("trivial.js", `return 1;`)
	rt := newRuntime(b, Options{})
	rt.Run(context.Background(), tool, p, nil)
	b.SetParallelism(2) // 2×GOMAXPROCS goroutines, the default MaxConcurrent
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if res := rt.Run(context.Background(), tool, p, nil); res.Err != nil {
				b.Error(res.Err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

// BenchmarkRSSPerLiveRun holds n JS runs alive at once (each has made a call and sleeps) and
// reports the growth of the process's resident set per run.
func BenchmarkRSSPerLiveRun(b *testing.B) {
	const n = 16
	ps := newPetstore(b)
	p := profile(b, ps.URL, "")
	tool := JSTool("live.js", `await api.get("/pets/1"); sleep(3600e3);`)
	rt := newRuntime(b, Options{MaxConcurrent: n})
	rt.Run(context.Background(), JSTool("warm.js", `return 1;`), p, nil)

	var perRun float64
	for range b.N {
		ps.requests.Store(0)
		runtime.GC()
		debug.FreeOSMemory()
		before := vmRSS(b)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() { rt.Run(ctx, tool, p, nil) })
		}
		for ps.requests.Load() < n {
			time.Sleep(time.Millisecond)
		}
		after := vmRSS(b)
		cancel()
		wg.Wait()
		perRun = float64(after-before) / n / (1 << 20)
	}
	b.ReportMetric(perRun, "MiB/run")
}

// vmRSS is the process's resident set size in bytes, from /proc/self/status.
func vmRSS(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status:", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	b.Skip("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkRunStart compares the start of a trivial run of the Go test guest (a .wasm tool, its
// compiled module reused by content hash) with a trivial JS run, side by side in one process.
func BenchmarkRunStart(b *testing.B) {
	ps := newPetstore(b)
	p := profile(b, ps.URL, "")
	rt := newRuntime(b, Options{})
	cases := []struct {
		name  string
		tool  Tool
		input []byte
	}{
		{"wasm tool, compiled once", goGuest(), guestCmd(map[string]any{"op": "state"})},
		{"js", JSTool("trivial.js", `return 1;`), nil},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			require.NoError(b, rt.Run(context.Background(), c.tool, p, c.input).Err) // compile outside the timing
			b.ResetTimer()
			reportMedian(b, nil, func() {
				if res := rt.Run(context.Background(), c.tool, p, c.input); res.Err != nil {
					b.Fatal(res.Err)
				}
			})
		})
	}
}

// BenchmarkWasmToolCompile is what a run of a .wasm tool paid before compiled modules were kept:
// compiling it (from wazero's file cache when warm), and what checking its structure costs now.
func BenchmarkWasmToolCompile(b *testing.B) {
	bin := testguest.Wasm()
	b.Run("compile, file cache warm", func(b *testing.B) {
		rt := newRuntime(b, Options{})
		for range b.N {
			g, err := rt.compile(context.Background(), bin)
			require.NoError(b, err)
			g.mod.Close(context.Background())
		}
	})
	b.Run("structure check", func(b *testing.B) {
		for range b.N {
			if _, err := checkModule(bin, DefaultModuleLimits()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFanOutGo is 10 GETs against an upstream that takes 50 ms each, from the Go test guest:
// one after another (host_call) and overlapped (host_submit/host_wait, the Go preamble's Go and
// WaitAll). ms/run is the whole run, the tool's wall time included.
func BenchmarkFanOutGo(b *testing.B) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond) // the upstream's latency the figure is about
		w.Write([]byte(`{}`))
	}))
	defer slow.Close()
	p := concurrentProfile(b, slow.URL, "limits:\n  max_inflight: 10\n")
	rt := shared(b)
	cases := map[string][]byte{
		"sequential": guestCmd(map[string]any{"op": "serial", "n": 10, "path": "/pets/%d"}),
		"concurrent": guestCmd(map[string]any{"op": "fanout", "n": 10, "path": "/pets/%d"}),
	}
	for _, name := range []string{"sequential", "concurrent"} {
		b.Run(name, func(b *testing.B) {
			var inside []time.Duration
			reportMedian(b, nil, func() {
				res := rt.Run(context.Background(), goGuest(), p, cases[name])
				if res.Err != nil || res.Audit.Forwarded != 10 {
					b.Fatal(res.Err, res.Audit.Counters)
				}
				inside = append(inside, callsTook(b, res.Log))
			})
			slices.Sort(inside)
			b.ReportMetric(float64(inside[len(inside)/2].Microseconds())/1000, "ms-in-tool-median")
		})
	}
}

// callsTook reads the "calls took N µs" line the test guest's fanout and serial log.
func callsTook(b *testing.B, log []byte) time.Duration {
	var us int64
	if _, err := fmt.Sscanf(string(log[bytes.LastIndex(log, []byte("calls took")):]), "calls took %d µs", &us); err != nil {
		b.Fatalf("no timing in the log %q: %v", log, err)
	}
	return time.Duration(us) * time.Microsecond
}

// BenchmarkConcurrentCallCost is what a call costs through the Go preamble's Go and Wait
// (host_submit/host_wait/host_result) against its blocking Do (host_call), from the Go test guest,
// with the broker answering at once (a denied route). b.N calls run in one guest run.
func BenchmarkConcurrentCallCost(b *testing.B) {
	ps := newPetstore(b)
	rt := shared(b)
	for _, name := range []string{"sequential", "concurrent"} {
		b.Run(name, func(b *testing.B) {
			p := profile(b, ps.URL, "limits:\n  max_host_calls: "+strconv.Itoa(b.N+1)+"\n  max_inflight: 8\n")
			op := map[string]string{"sequential": "serial", "concurrent": "fanout"}[name]
			cmd := guestCmd(map[string]any{"op": op, "n": b.N, "path": "/admin/%d"})
			b.ResetTimer()
			res := rt.Run(context.Background(), goGuest(), p, cmd)
			b.StopTimer()
			require.NoError(b, res.Err)
			require.Equal(b, b.N, res.Audit.Denied)
			b.ReportMetric(float64(callsTook(b, res.Log).Nanoseconds())/float64(b.N), "ns/call-in-tool")
		})
	}
}

// BenchmarkFanOutJS is BenchmarkFanOutGo from a JS tool: 10 api.get against an upstream that
// takes 50 ms each, awaited one after another and through Promise.all. ms-in-tool-median is the
// calls' wall time inside the tool (Date.now, so to the millisecond).
func BenchmarkFanOutJS(b *testing.B) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond) // the upstream's latency the figure is about
		w.Write([]byte(`{}`))
	}))
	defer slow.Close()
	p := concurrentProfile(b, slow.URL, "limits:\n  max_inflight: 10\n")
	rt := shared(b)
	tools := map[string]Tool{
		"sequential": JSTool("serial.js", `const t0 = Date.now();
for (let i = 0; i < 10; i++) await api.get("/pets/" + i);
console.log("calls took " + (Date.now() - t0) * 1000 + " µs");`),
		"concurrent": JSTool("fanout.js", `const t0 = Date.now();
await Promise.all(Array.from({length: 10}, (_, i) => api.get("/pets/" + i)));
console.log("calls took " + (Date.now() - t0) * 1000 + " µs");`),
	}
	for _, name := range []string{"sequential", "concurrent"} {
		b.Run(name, func(b *testing.B) {
			var inside []time.Duration
			reportMedian(b, nil, func() {
				res := rt.Run(context.Background(), tools[name], p, nil)
				if res.Err != nil || res.Audit.Forwarded != 10 {
					b.Fatal(res.Err, res.Audit.Counters)
				}
				inside = append(inside, callsTook(b, res.Log))
			})
			slices.Sort(inside)
			b.ReportMetric(float64(inside[len(inside)/2].Microseconds())/1000, "ms-in-tool-median")
		})
	}
}

// BenchmarkConcurrentCallCostJS is BenchmarkConcurrentCallCost from a JS tool: b.N api.get of a
// denied route (the broker answers at once), awaited one after another, and all at once through
// Promise.all (max_inflight 8: the rest wait in the engine). ns/call-in-tool is the tool's own
// time over the calls (Date.now).
func BenchmarkConcurrentCallCostJS(b *testing.B) {
	ps := newPetstore(b)
	rt := shared(b)
	tools := map[string]Tool{
		"sequential": JSTool("serial.js", `const t0 = Date.now();
for (let i = 0; i < input.n; i++) await api.get("/admin/" + i);
console.log("calls took " + (Date.now() - t0) * 1000 + " µs");`),
		"concurrent": JSTool("fanout.js", `const t0 = Date.now();
const ps = [];
for (let i = 0; i < input.n; i++) ps.push(api.get("/admin/" + i));
await Promise.all(ps);
console.log("calls took " + (Date.now() - t0) * 1000 + " µs");`),
	}
	for _, name := range []string{"sequential", "concurrent"} {
		b.Run(name, func(b *testing.B) {
			p := profile(b, ps.URL, "limits:\n  max_host_calls: "+strconv.Itoa(b.N+1)+"\n  max_inflight: 8\n")
			rt.Run(context.Background(), tools[name], p, []byte(`{"n":1}`)) // compile outside the timing
			b.ResetTimer()
			res := rt.Run(context.Background(), tools[name], p, []byte(`{"n":`+strconv.Itoa(b.N)+`}`))
			b.StopTimer()
			require.NoError(b, res.Err)
			require.Equal(b, b.N, res.Audit.Denied)
			b.ReportMetric(float64(callsTook(b, res.Log).Nanoseconds())/float64(b.N), "ns/call-in-tool")
		})
	}
}
