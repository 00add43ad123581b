package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja" // test-only: native goja is the baseline the engine is measured against
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/profiles"
)

// Workloads run the same script three ways in the same benchmark run: as a JS tool through the
// host (QuickJS-ng inside wasm, the whole run: instance, call, response, result), in native goja
// (an api.get stand-in hands over the same body), and in node when it is installed. Each reports
// the median ms per run of each and the ratios qjs/goja and qjs/node.
//
//	go test -run '^$' -bench Workload -benchtime 5x ./host/

const workloadFilterSort = `const res = await api.get(input.path);
const items = res.json();
return items.filter((x) => x.price > 50 && x.tags.includes("b"))
  .sort((a, b) => b.price - a.price || a.id - b.id)
  .slice(0, 20)
  .map((x) => ({id: x.id, name: x.name.toUpperCase(), price: x.price}));`

const workloadStrings = `const out = [];
for (const r of input.records) {
  const m = /^([a-z]+)-(\d+)$/.exec(r.code);
  if (m && r.name.toLowerCase().includes("a")) {
    out.push(m[1].toUpperCase() + ":" + r.name.replace(/\s+/g, "_") + ":" + (Number(m[2]) % 97));
  }
}
return out.length + ":" + out.slice(0, 3).join(",");`

const workloadNumeric = `let s = 0;
for (let i = 0; i < 1e7; i++) { s = (s + i * i) % 1000003; }
return s;`

// workloadText builds a ~2 MB string and runs the three regex-heavy built-ins over it: split on
// whitespace, a global replace with capture references, and a global match.
const workloadText = `const parts = [];
for (let i = 0; parts.length < 60000; i++) {
  parts.push("2026-" + String(1 + i % 12).padStart(2, "0") + "-" + String(1 + i % 28).padStart(2, "0") +
    "  item" + i + "\tvalue=" + (i * 7919 % 100000) + (i % 5 ? " " : "\n"));
}
const s = parts.join("");
const words = s.split(/\s+/).length;
const swapped = s.replace(/(\d{4})-(\d\d)-(\d\d)/g, "$3/$2/$1");
const values = s.match(/value=\d+/g).length;
return [s.length, words, swapped.length, swapped.slice(0, 40), values];`

const workloadFib = `function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
return fib(27);`

const workloadSieve = `const n = 2e6, sieve = new Uint8Array(n + 1);
let count = 0;
for (let i = 2; i <= n; i++) {
  if (sieve[i]) continue;
  count++;
  for (let j = i * i; j <= n; j += i) sieve[j] = 1;
}
return count;`

// recordsJSON is a JSON array of records of about size bytes.
func recordsJSON(size int) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; b.Len() < size-200; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"pet number %d","price":%d,"tags":["a","%c"],"code":"x-%d"}`,
			i, i, (i*7919)%100, "abc"[i%3], i)
	}
	b.WriteString("]")
	return []byte(b.String())
}

func stringRecords(n int) []byte {
	type rec struct {
		Code string `json:"code"`
		Name string `json:"name"`
	}
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = rec{Code: []string{"alpha", "beta", "gamma"}[i%3] + "-" + strconv.Itoa(i), Name: "Rex  the   dog " + strconv.Itoa(i)}
	}
	b, _ := json.Marshal(map[string]any{"records": recs})
	return b
}

// gojaRun runs script as an async function body in a fresh native goja runtime, with api.get
// answering body.
func gojaRun(tb testing.TB, script string, input []byte, body string) string {
	vm := goja.New()
	require.NoError(tb, vm.Set("__body", func() string { return body }))
	_, err := vm.RunString(`var api = {get: function () { const b = __body(); return Promise.resolve({json: () => JSON.parse(b), text: () => b}); }};`)
	require.NoError(tb, err)
	fn, err := vm.RunString("(async function(input) {" + script + "\n})")
	require.NoError(tb, err)
	call, _ := goja.AssertFunction(fn)
	in, err := vm.RunString("(" + string(input) + ")")
	require.NoError(tb, err)
	p, err := call(goja.Undefined(), in)
	require.NoError(tb, err)
	promise := p.Export().(*goja.Promise)
	require.Equal(tb, goja.PromiseStateFulfilled, promise.State(), "%v", promise.Result())
	out, err := json.Marshal(promise.Result().Export())
	require.NoError(tb, err)
	return string(out)
}

// nodeMedian runs script n times in one node process and returns the median ms per run, or 0
// when node is not installed.
func nodeMedian(tb testing.TB, script string, input []byte, body []byte, n int) float64 {
	node, err := exec.LookPath("node")
	if err != nil {
		return 0
	}
	dir := tb.TempDir()
	bodyPath, inputPath := filepath.Join(dir, "body.json"), filepath.Join(dir, "input.json")
	require.NoError(tb, os.WriteFile(bodyPath, body, 0o644))
	require.NoError(tb, os.WriteFile(inputPath, input, 0o644))
	prog := `const fs = require("fs");
const body = fs.readFileSync(process.argv[2], "utf8");
const inputText = fs.readFileSync(process.argv[3], "utf8");
const api = {get: () => Promise.resolve({json: () => JSON.parse(body), text: () => body})};
const tool = new Function("api", "input", "return (async () => {" + fs.readFileSync(process.argv[4], "utf8") + "\n})();");
(async () => {
  const ds = [];
  for (let i = 0; i < Number(process.argv[5]); i++) {
    const t0 = process.hrtime.bigint();
    const out = await tool(api, JSON.parse(inputText));
    JSON.stringify(out);
    ds.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ds.sort((a, b) => a - b);
  console.log(ds[Math.floor(ds.length / 2)]);
})();`
	progPath, scriptPath := filepath.Join(dir, "bench.js"), filepath.Join(dir, "tool.js")
	require.NoError(tb, os.WriteFile(progPath, []byte(prog), 0o644))
	require.NoError(tb, os.WriteFile(scriptPath, []byte(script), 0o644))
	out, err := exec.Command(node, progPath, bodyPath, inputPath, scriptPath, strconv.Itoa(n)).CombinedOutput()
	require.NoError(tb, err, "%s", out)
	ms, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	require.NoError(tb, err, "%s", out)
	return ms
}

func median(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds()) / 1000
}

func BenchmarkWorkload(b *testing.B) {
	big1 := recordsJSON(1 << 20)
	big8 := recordsJSON(8<<20 - 64) // the body just fits the default max_response_bytes (8 MiB)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/pets/big1":
			w.Write(big1)
		case "/v1/pets/big8":
			w.Write(big8)
		default:
			http.NotFound(w, r)
		}
	}))
	b.Cleanup(srv.Close)
	p := profile(b, srv.URL, "")
	rt := shared(b)

	for _, wl := range []struct {
		name, script string
		input, body  []byte
	}{
		{"json_filter_sort_1MiB", workloadFilterSort, []byte(`{"path":"/pets/big1"}`), big1},
		{"json_filter_sort_8MiB", workloadFilterSort, []byte(`{"path":"/pets/big8"}`), big8},
		{"string_regex_10k_records", workloadStrings, stringRecords(10000), nil},
		{"numeric_loop_1e7", workloadNumeric, []byte(`null`), nil},
		{"text_2MB_split_replace_match", workloadText, []byte(`null`), nil},
		{"fib_27", workloadFib, []byte(`null`), nil},
		{"sieve_2e6", workloadSieve, []byte(`null`), nil},
	} {
		b.Run(wl.name, func(b *testing.B) {
			tool := JSTool("workload.js", wl.script)
			first := rt.Run(context.Background(), tool, p, wl.input)
			require.NoError(b, first.Err, "%s", first.Log)
			want := gojaRun(b, wl.script, wl.input, string(wl.body))
			require.JSONEq(b, want, string(first.Output), "goja and the engine agree")

			var qjs, gj []time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				res := rt.Run(context.Background(), tool, p, wl.input)
				qjs = append(qjs, time.Since(t0))
				require.NoError(b, res.Err)
				t0 = time.Now()
				gojaRun(b, wl.script, wl.input, string(wl.body))
				gj = append(gj, time.Since(t0))
			}
			b.StopTimer()
			q, g := median(qjs), median(gj)
			b.ReportMetric(q, "qjs-ms")
			b.ReportMetric(g, "goja-ms")
			b.ReportMetric(q/g, "qjs/goja")
			if n := nodeMedian(b, wl.script, wl.input, wl.body, max(b.N, 5)); n > 0 {
				b.ReportMetric(n, "node-ms")
				b.ReportMetric(q/n, "qjs/node")
			}
		})
	}
}

// BenchmarkCloseOnDoneCost measures what wazero's close-on-context-done would cost the JS engine's
// throughput (its compiler calls an exit check at every loop header), on a numeric loop and a
// JSON workload, in the same run: "on" is the engine's runtime with it, "off" without (the
// default; the engine's own checks stop runaways).
//
//	go test -run '^$' -bench CloseOnDoneCost -benchtime 5x ./host/
func BenchmarkCloseOnDoneCost(b *testing.B) {
	input := stringRecords(10000)
	jsonTool := `const t = JSON.stringify(input); let n = 0; for (let i = 0; i < 20; i++) n += JSON.parse(t).records.length; return n;`
	srv := httptest.NewServer(http.NotFoundHandler())
	b.Cleanup(srv.Close)
	p := profile(b, srv.URL, "")
	runtimes := map[bool]*Runtime{}
	saved := closeOnContextDone
	for _, on := range []bool{true, false} {
		closeOnContextDone = on
		rt, err := New(context.Background(), Options{CacheDir: testCacheDir(), Getenv: testGetenv})
		closeOnContextDone = saved
		require.NoError(b, err)
		b.Cleanup(func() { rt.Close(context.Background()) })
		runtimes[on] = rt
	}
	for _, wl := range []struct{ name, js string }{{"numeric_loop_1e7", workloadNumeric}, {"json_parse_stringify", jsonTool}} {
		b.Run(wl.name, func(b *testing.B) {
			tool := JSTool("w.js", wl.js)
			for _, rt := range runtimes {
				require.NoError(b, rt.Run(context.Background(), tool, p, input).Err)
			}
			d := map[bool][]time.Duration{}
			for range b.N {
				for _, on := range []bool{true, false} {
					t0 := time.Now()
					res := runtimes[on].Run(context.Background(), tool, p, input)
					d[on] = append(d[on], time.Since(t0))
					require.NoError(b, res.Err)
				}
			}
			on, off := median(d[true]), median(d[false])
			b.ReportMetric(on, "on-ms")
			b.ReportMetric(off, "off-ms")
			b.ReportMetric(on/off, "on/off")
		})
	}
}

// TestDefaultLimitsFit8MiB: an 8 MiB JSON body (the default max_response_bytes) reaches a tool
// under the default limits, although its response envelope (the body as an escaped JSON string)
// is larger.
func TestDefaultLimitsFit8MiB(t *testing.T) {
	body := recordsJSON(8<<20 - 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	t.Cleanup(srv.Close)
	p := profile(t, srv.URL, "")
	require.Equal(t, profiles.DefaultLimits.MaxResponseBytes, p.Limits.OrDefaults().MaxResponseBytes)
	res := shared(t).Run(context.Background(), JSTool("big.js", `const r = await api.get("/pets/x"); return [r.status, r.body.length, r.json().length];`), p, nil)
	require.NoError(t, res.Err, "%s", res.Log)
	var got []int
	require.NoError(t, json.Unmarshal(res.Output, &got))
	require.Equal(t, 200, got[0])
	require.Equal(t, len(body), got[1])
	t.Logf("8 MiB body (%d bytes) under default limits: status %d, %d records", len(body), got[0], got[2])
}
