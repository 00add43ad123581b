package host

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// runaways are tools that try to run forever or take the engine down. Each must end with status
// timeout, limit or error, one audit line, and no crash dump in the log. The time each takes past
// the run deadline is logged (go test -v -run TestRunaways); BENCHMARKS.md records it.
var runaways = []struct {
	name string
	js   string
	want []broker.Status // acceptable statuses
}{
	{"empty loop", `for (;;) {}`, timeout},
	{"loop swallowing every error", `for (;;) { try { for (;;) {} } catch (e) {} finally {} }`, timeout},
	{"loop swallowing thrown errors", `for (;;) { try { throw new Error("x"); } catch (e) {} }`, timeout},
	{"catastrophic regex", `return /^(a+)+$/.test("a".repeat(40) + "b");`, timeout},
	{"catastrophic regex, global replace", `return ("a".repeat(30) + "!").repeat(100).replace(/(a|aa)+$/g, "");`, timeout},
	{"huge BigInt power", `return String(10n ** (10n ** 7n)).length;`, any3},
	{"native sort of 10^7 numbers", `const a = []; for (let i = 0; i < 1e7; i++) a.push((i * 7919) % 1e7); a.sort(); return a.length;`, timeoutOrLimit},
	{"native sort of 10^7 numbers, typed", `const a = new Float64Array(1e7); for (let i = 0; i < a.length; i++) a[i] = (i * 7919) % 1e7; for (;;) a.sort();`, timeoutOrLimit},
	{"repeat 2^28", `return "x".repeat(2 ** 28).length;`, timeoutOrLimit},
	{"replaceAll on 2^28", `const s = "x".repeat(2 ** 28); return s.replaceAll("x", "yy").length;`, timeoutOrLimit},
	{"string doubling", `let s = "x"; for (;;) s = s + s;`, timeoutOrLimit},
	{"JSON.stringify of a deep structure", `let o = {}; for (let i = 0; i < 1e6; i++) o = {o}; return JSON.stringify(o).length;`, any3},
	{"JSON.parse of a deep structure", `return JSON.parse("[".repeat(1e6) + "]".repeat(1e6));`, limitOrError},
	{"await loop", `for (;;) await null;`, timeout},
	{"microtask flood", `function f() { Promise.resolve().then(f); Promise.resolve().then(f); } f(); await new Promise(() => {});`, timeoutOrLimit},
	{"microtask chain", `function f() { return Promise.resolve().then(f); } await f();`, timeoutOrLimit},
	{"generator loop", `function* g() { for (;;) yield 1; } for (const x of g()) {}`, timeout},
	{"async generator loop", `async function* g() { for (;;) yield 1; } for await (const x of g()) {}`, timeout},
	{"Proxy trap loop", `const p = new Proxy({}, {get(t, k) { for (;;) {} }}); return p.x;`, timeout},
	{"Proxy trap recursion", `const p = new Proxy({}, {get(t, k, r) { return r[k]; }}); return p.x;`, limitOnly},
	{"Proxy as prototype chain", `const p = new Proxy({}, {get(t, k, r) { return Reflect.get(Object.create(r), k); }}); return p.x;`, limitOrError},
	{"deep recursion", `function f(n) { return f(n + 1) + 1; } return f(0);`, limitOnly},
	{"deep recursion caught and retried", `function f(n) { return f(n + 1) + 1; } for (;;) { try { f(0); } catch (e) {} }`, timeout},
	{"mutual recursion through toString", `const o = {toString() { return "" + this; }}; return String(o);`, limitOnly},
	{"toString that loops in a native call", `return [1, 2, 3].join({toString() { for (;;) {} }});`, timeout},
	{"sort comparator loops", `return [3, 2, 1].sort(() => { for (;;) {} });`, timeout},
	{"memory bomb, arrays", `const keep = []; for (;;) keep.push(new Array(1e5).fill(1));`, timeoutOrLimit},
	{"memory bomb, buffers then catch", `const keep = []; for (;;) { try { keep.push(new ArrayBuffer(1 << 20)); } catch (e) {} }`, timeoutOrLimit},
	{"eval loop", `for (;;) eval("1 + 1");`, timeout},
	{"Function constructor recursion", `const f = new Function("f", "return f(f) + 1"); return f(f);`, limitOnly},
	{"sleep loop", `for (;;) await sleep(10);`, timeout},
	{"log flood", `for (;;) console.log("x".repeat(1000));`, limitOnly},
	{"output flood", `return "x".repeat(64 << 20);`, limitOnly},
	{"Array.from a huge length", `return Array.from({length: 2 ** 31}).length;`, timeoutOrLimit},
	{"padEnd to the maximum", `return "a".padEnd(2 ** 30 - 1).length;`, timeoutOrLimit},
	{"native loop over a huge array-like", `return Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1);`, timeout},
	{"native join of a huge array-like", `return Array.prototype.join.call({length: 2 ** 31}).length;`, timeoutOrLimit},
	{"exponential regex with a backreference", `return /^(\w+\s?)*\1$/.test("ab ".repeat(30) + "!");`, timeout},
}

var (
	timeout        = []broker.Status{broker.StatusTimeout}
	limitOnly      = []broker.Status{broker.StatusLimit}
	limitOrError   = []broker.Status{broker.StatusLimit, broker.StatusError}
	timeoutOrLimit = []broker.Status{broker.StatusTimeout, broker.StatusLimit}
	any3           = []broker.Status{broker.StatusTimeout, broker.StatusLimit, broker.StatusError}
)

// crashMarkers are what a Go or engine crash would leave in the log.
var crashMarkers = []string{"goroutine ", "panic:", "fatal error:", "wasm stack trace", "runtime error", "unreachable", "out of bounds memory access"}

const runawayTimeout = 500 * time.Millisecond

// unreachableTimeout is the deadline of a case whose right end is a limit or an error: it ends by
// itself, so a deadline it could meet on a loaded machine would only turn its verdict into
// "timeout". This one only stops a regression from hanging the suite.
const unreachableTimeout = 2 * time.Minute

func runawayProfileYAML() string { return runawayProfileWith(runawayTimeout) }

func runawayProfileWith(deadline time.Duration) string {
	return fmt.Sprintf("limits:\n  run_timeout: %s\n  memory: 64MiB\n  max_log_bytes: 64KiB\n  max_output_bytes: 1MiB\n", deadline)
}

// deadlineFor is the run deadline a case may race: runawayTimeout when a timeout is one of its
// right ends, else unreachableTimeout.
func deadlineFor(want []broker.Status) time.Duration {
	if slices.Contains(want, broker.StatusTimeout) {
		return runawayTimeout
	}
	return unreachableTimeout
}

func TestRunaways(t *testing.T) {
	runRunaways(t, shared(t))
}

// TestRunawaysOneMechanism measures each way of stopping a runaway alone (PLIMSOLL_MEASURE_RUNAWAYS=1):
// "engine checks only" is the engine's interrupt handler and loop countdown against the deadline
// it is given, without wazero's close-on-context-done (the default); "close-on-done only" the
// reverse. A case that a mechanism cannot stop is reported and left running, so this is a
// measurement, not part of the suite.
func TestRunawaysOneMechanism(t *testing.T) {
	if os.Getenv("PLIMSOLL_MEASURE_RUNAWAYS") == "" {
		t.Skip("set PLIMSOLL_MEASURE_RUNAWAYS=1 to measure")
	}
	for _, m := range []struct {
		name             string
		close, interrupt bool
	}{{"engine checks only", false, true}, {"close-on-done only", true, false}} {
		t.Run(m.name, func(t *testing.T) {
			closeOnContextDone, engineDeadline = m.close, m.interrupt
			defer func() { closeOnContextDone, engineDeadline = false, true }()
			rt, err := New(context.Background(), Options{CacheDir: testCacheDir(), Getenv: testGetenv})
			require.NoError(t, err)
			ps := newPetstore(t)
			p := profile(t, ps.URL, runawayProfileYAML())
			for _, tc := range runaways {
				done := make(chan Result, 1)
				start := time.Now()
				go func() { done <- rt.Run(context.Background(), JSTool("runaway.js", tc.js), p, nil) }()
				select {
				case res := <-done:
					took := time.Since(start)
					t.Logf("%-45s %-8s %+6dms past the deadline", tc.name, res.Audit.Status, (took - runawayTimeout).Milliseconds())
				case <-time.After(runawayTimeout + 3*time.Second):
					t.Logf("%-45s NOT STOPPED after deadline + 3s", tc.name)
				}
			}
		})
	}
}

func runRunaways(t *testing.T, rt *Runtime) {
	ps := newPetstore(t)
	byDeadline := map[time.Duration]*profiles.Profile{
		runawayTimeout:     profile(t, ps.URL, runawayProfileWith(runawayTimeout)),
		unreachableTimeout: profile(t, ps.URL, runawayProfileWith(unreachableTimeout)),
	}
	for _, tc := range runaways {
		t.Run(tc.name, func(t *testing.T) {
			deadline := deadlineFor(tc.want)
			start := time.Now()
			res := rt.Run(context.Background(), JSTool("runaway.js", tc.js), byDeadline[deadline], nil)
			took := time.Since(start)
			t.Logf("status %s after %s (deadline %s): %v", res.Audit.Status, took.Round(time.Millisecond), deadline, res.Err)
			require.Contains(t, tc.want, res.Audit.Status, "err: %v\nlog tail: %s", res.Err, tail(res.Log))
			require.Error(t, res.Err)
			require.NotEmpty(t, res.Audit.RunID, "one audit line")
			require.Equal(t, res.Err.Error(), res.Audit.Error)
			for _, m := range crashMarkers {
				require.NotContains(t, string(res.Log), m, "a crash dump in the log")
				require.NotContains(t, res.Err.Error(), m, "a crash in the error")
			}
		})
	}
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return strings.TrimSpace(s)
}
