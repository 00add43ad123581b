package host

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Python workloads: each is a tool body that times its own work with time.perf_counter and
// returns {"ms": ..., "check": ...}. The same body runs as a Python tool through the host
// (CPython inside wasm) and in the machine's python3 (an async function run in one process),
// alternated in one benchmark run; each reports the medians and their ratio (wasm/native), and
// the whole run's median (instance, call, result) beside it.
//
//	go test -run '^$' -bench PythonWorkload -benchtime 5x ./host/
var pythonWorkloads = []struct{ name, body string }{
	{"json_1MiB_loads_filter_dumps", `import json, time
t0 = time.perf_counter()
items = json.loads(input["text"])
kept = [{"id": x["id"], "name": x["name"].upper(), "price": x["price"]} for x in items if x["price"] > 50 and "b" in x["tags"]]
out = json.dumps(kept)
return {"ms": (time.perf_counter() - t0) * 1000, "check": len(out)}`},
	{"regex_2MB_findall_sub", `import re, time
text = ("alpha-123 Rex the  dog; beta-45 Ada  the cat; " * 50000)[:2000000]
t0 = time.perf_counter()
found = re.findall(r"([a-z]+)-(\d+)", text)
subbed = re.sub(r"(\w+)\s+the\s+(\w+)", r"\2:\1", text)
return {"ms": (time.perf_counter() - t0) * 1000, "check": len(found) + len(subbed)}`},
	{"sum_of_squares_3e6", `import time
t0 = time.perf_counter()
s = 0
for i in range(3000000):
    s += i * i
return {"ms": (time.perf_counter() - t0) * 1000, "check": s % 1000003}`},
	{"fib_25", `import time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
t0 = time.perf_counter()
r = fib(25)
return {"ms": (time.perf_counter() - t0) * 1000, "check": r}`},
}

// workloadInput is the tools' input: a 1 MiB JSON array of records as a string.
func workloadInput(tb testing.TB) []byte {
	b, err := json.Marshal(map[string]string{"text": string(recordsJSON(1 << 20))})
	require.NoError(tb, err)
	return b
}

type workloadResult struct {
	Ms    float64 `json:"ms"`
	Check float64 `json:"check"`
}

// nativePython runs body n times in one python3 process, each as a fresh async function, and
// returns the results; it skips when python3 is not installed.
func nativePython(tb testing.TB, body string, input []byte, n int) []workloadResult {
	py, err := exec.LookPath("python3")
	if err != nil {
		tb.Skip("no python3 to compare with")
	}
	dir := tb.TempDir()
	inputPath, toolPath := filepath.Join(dir, "input.json"), filepath.Join(dir, "tool.py")
	require.NoError(tb, os.WriteFile(inputPath, input, 0o644))
	require.NoError(tb, os.WriteFile(toolPath, []byte(body), 0o644))
	prog := `import asyncio, json, sys
src = open(sys.argv[2]).read()
fn = "async def __tool__(input):\n" + "".join("    " + l + "\n" for l in src.splitlines())
out = []
for _ in range(int(sys.argv[3])):
    scope = {}
    exec(compile(fn, "tool.py", "exec"), scope)
    out.append(asyncio.run(scope["__tool__"](json.load(open(sys.argv[1])))))
print(json.dumps(out))`
	out, err := exec.Command(py, "-I", "-c", prog, inputPath, toolPath, strconv.Itoa(n)).Output()
	require.NoError(tb, err)
	var res []workloadResult
	require.NoError(tb, json.Unmarshal(out, &res))
	return res
}

func BenchmarkPythonWorkload(b *testing.B) {
	rt := shared(b)
	ps := newPetstore(b)
	p := profile(b, ps.URL, "limits:\n  run_timeout: 120s\n")
	input := workloadInput(b)
	for _, wl := range pythonWorkloads {
		b.Run(wl.name, func(b *testing.B) {
			tool := PythonTool("workload.py", wl.body)
			first := rt.Run(context.Background(), tool, p, input)
			require.NoError(b, first.Err, "%s", first.Log)
			var wasm workloadResult
			require.NoError(b, json.Unmarshal(first.Output, &wasm))
			native := nativePython(b, wl.body, input, 1)
			require.Equal(b, native[0].Check, wasm.Check, "python3 and the guest agree")

			var inGuest, whole []time.Duration
			var nat []time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				res := rt.Run(context.Background(), tool, p, input)
				whole = append(whole, time.Since(t0))
				require.NoError(b, res.Err)
				require.NoError(b, json.Unmarshal(res.Output, &wasm))
				inGuest = append(inGuest, time.Duration(wasm.Ms*float64(time.Millisecond)))
				r := nativePython(b, wl.body, input, 1)[0]
				nat = append(nat, time.Duration(r.Ms*float64(time.Millisecond)))
			}
			b.StopTimer()
			g, n, w := median(inGuest), median(nat), median(whole)
			b.ReportMetric(g, "wasm-ms")
			b.ReportMetric(n, "native-ms")
			b.ReportMetric(g/n, "wasm/native")
			b.ReportMetric(w, "whole-run-ms")
		})
	}
}

// BenchmarkPythonRunStart is a trivial Python run from the interpreter's snapshot (a fresh
// instance, the request, the result), reported as wall time and as the process's CPU time per
// run; json, re and datetime are imported already, in the snapshot.
//
//	go test -run '^$' -bench PythonRunStart -benchtime 50x ./host/
func BenchmarkPythonRunStart(b *testing.B) {
	rt := shared(b)
	ps := newPetstore(b)
	p := profile(b, ps.URL, "")
	tool := PythonTool("trivial.py", "import json, re, datetime\nreturn 1")
	require.NoError(b, rt.Run(context.Background(), tool, p, nil).Err) // start the interpreter outside the timing
	cpu0 := cpuTime()
	b.ResetTimer()
	reportMedian(b, nil, func() {
		if res := rt.Run(context.Background(), tool, p, nil); res.Err != nil {
			b.Fatal(res.Err)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/run")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHostCallPython is one awaited api.get from a Python tool against the Go test guest's
// host_call, both answered by the broker cheaply (a denied route), b.N calls in one run each: the
// difference is the Python client's and engine's own cost per call.
//
//	go test -run '^$' -bench HostCallPython -benchtime 2000x ./host/
func BenchmarkHostCallPython(b *testing.B) {
	ps := newPetstore(b)
	p := profile(b, ps.URL, "limits:\n  max_host_calls: "+strconv.Itoa(b.N+1)+"\n")
	rt := shared(b)
	tool := PythonTool("calls.py", "for _ in range(input['n']):\n    await api.get('/admin')\nreturn input['n']")
	require.NoError(b, rt.Run(context.Background(), tool, p, []byte(`{"n":1}`)).Err)
	envelope := `{"method":"GET","path":"/admin"}`

	b.ResetTimer()
	t0 := time.Now()
	res := rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "call", "n": b.N, "envelope": envelope, "cap": 4096}))
	goPer := time.Since(t0)
	require.NoError(b, res.Err)
	t0 = time.Now()
	res = rt.Run(context.Background(), tool, p, []byte(`{"n":`+strconv.Itoa(b.N)+`}`))
	pyPer := time.Since(t0)
	b.StopTimer()
	require.NoError(b, res.Err, "%s", res.Log)
	require.Equal(b, b.N, res.Audit.Denied)
	goUs := float64(goPer.Nanoseconds()) / float64(b.N) / 1000
	pyUs := float64(pyPer.Nanoseconds()) / float64(b.N) / 1000
	b.ReportMetric(pyUs, "python-µs/call")
	b.ReportMetric(goUs, "go-µs/call")
	b.ReportMetric(pyUs-goUs, "python-over-go-µs")
}

// BenchmarkPythonGather is ten calls of 50 ms each under asyncio.gather, one run: the run's wall
// time against the 50 ms one call takes.
//
//	go test -run '^$' -bench PythonGather -benchtime 5x ./host/
func BenchmarkPythonGather(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond) // each call takes 50 ms at the API
	}))
	b.Cleanup(up.Close)
	p := profile(b, up.URL, "limits:\n  max_inflight: 10\n")
	rt := shared(b)
	tool := PythonTool("gather.py", "import asyncio\nrs = await asyncio.gather(*(api.get(f'/pets/{i}') for i in range(10)))\nreturn [r.status for r in rs]")
	require.NoError(b, rt.Run(context.Background(), tool, p, nil).Err)
	b.ResetTimer()
	reportMedian(b, nil, func() {
		res := rt.Run(context.Background(), tool, p, nil)
		if res.Err != nil || !strings.Contains(string(res.Output), "200") {
			b.Fatal(res.Err, string(res.Output))
		}
	})
}

// BenchmarkPythonRSSPerLiveRun holds n Python runs alive at once (each has made a call and sleeps)
// and reports the growth of the process's resident set per run.
func BenchmarkPythonRSSPerLiveRun(b *testing.B) {
	const n = 16
	ps := newPetstore(b)
	p := profile(b, ps.URL, "")
	tool := PythonTool("live.py", "import asyncio\nawait api.get('/pets/1')\nawait asyncio.sleep(3600)")
	rt := newRuntime(b, Options{MaxConcurrent: n})
	require.NoError(b, rt.Run(context.Background(), PythonTool("warm.py", "return 1"), p, nil).Err)
	var perRun float64
	for range b.N {
		ps.requests.Store(0)
		before := vmRSS(b)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, n)
		for range n {
			go func() { rt.Run(ctx, tool, p, nil); done <- struct{}{} }()
		}
		for ps.requests.Load() < n {
			time.Sleep(time.Millisecond)
		}
		after := vmRSS(b)
		cancel()
		for range n {
			<-done
		}
		perRun = float64(after-before) / n / (1 << 20)
	}
	b.ReportMetric(perRun, "MiB/run")
}
