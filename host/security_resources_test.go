package host_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
)

// Guest resources: every run ends at its limit, with the status and a message naming it,
// and leaves nothing running.
var resourceCases = []secCase{
	{class: resources, name: "tight loop before any call", lim: lim{"run_timeout": "400ms"}, js: `while (true) {}`, status: broker.StatusTimeout, err: `run timed out: limits.run_timeout (400ms) passed`, calls: none},
	{class: resources, name: "tight loop after a call", lim: lim{"run_timeout": "400ms"}, js: `await api.get("/pets/1"); for (;;) {}`, status: broker.StatusTimeout, err: `run timed out: limits.run_timeout (400ms) passed`, calls: fwd1},
	{class: resources, name: "Go guest spinning", lim: lim{"run_timeout": "400ms"}, cmd: map[string]any{"op": "loop"}, status: broker.StatusTimeout, err: `run timed out: limits.run_timeout (400ms) passed`, calls: none},
	{class: resources, name: "sleep past the deadline", lim: lim{"run_timeout": "300ms"}, js: `sleep(3600e3); return "woke";`, status: broker.StatusTimeout, err: `limits.run_timeout (300ms) passed`, calls: none},
	{class: resources, name: "backtracking regular expression", lim: lim{"run_timeout": "400ms"}, js: `return /^(a|aa)+(?=b)$/.test("a".repeat(64));`, status: broker.StatusTimeout, err: `limits.run_timeout (400ms) passed`, calls: none},
	{class: resources, name: "memory bomb, buffers", lim: lim{"memory": "48MiB"}, js: `const keep = []; for (;;) keep.push(new ArrayBuffer(1 << 20));`, status: broker.StatusLimit, err: `memory limit limits.memory (48MiB) reached`, calls: none},
	{class: resources, name: "memory bomb, objects", lim: lim{"memory": "24MiB"}, js: `const keep = []; for (let i = 0; ; i++) keep.push({i, s: "item " + i});`, status: broker.StatusLimit, err: `memory limit limits.memory (24MiB) reached`, calls: none},
	{class: resources, name: "memory bomb, string doubling", lim: lim{"memory": "48MiB"}, js: `let s = "x"; for (;;) s = s + s + "y";`, status: broker.StatusLimit, err: `guest limit: string length exceeded (the engine's maximum is 2^30-1 characters)`, calls: none},
	{class: resources, name: "memory bomb, Go guest", lim: lim{"memory": "32MiB"}, cmd: map[string]any{"op": "oom"}, status: broker.StatusLimit, err: `memory limit limits.memory (32MiB) reached`, calls: none},
	{class: resources, name: "unbounded recursion", js: `function f(n) { return f(n + 1) + 1; } return f(0);`, status: broker.StatusLimit, err: `guest limit: call stack depth exceeded (896 KiB of stack)`, calls: none},
	{class: resources, name: "recursion through a getter", js: `const o = {}; Object.defineProperty(o, "x", {get() { return this.x + 1; }}); return o.x;`, status: broker.StatusLimit, err: `guest limit: call stack depth exceeded (896 KiB of stack)`, calls: none},
	{class: resources, name: "output flood, JavaScript", lim: lim{"max_output_bytes": "64KiB"}, js: `return "x".repeat(2 << 20);`, status: broker.StatusLimit, err: `output limit limits.max_output_bytes (64KiB) reached`, calls: none},
	{class: resources, name: "output flood, Go guest", lim: lim{"max_output_bytes": "64KiB"}, cmd: map[string]any{"op": "flood", "fd": 1}, status: broker.StatusLimit, err: `output limit limits.max_output_bytes (64KiB) reached`, calls: none},
	{class: resources, name: "log flood, JavaScript", lim: lim{"max_log_bytes": "16KiB"}, js: `for (;;) console.log("spam spam spam");`, status: broker.StatusLimit, err: `log limit limits.max_log_bytes (16KiB) reached`, calls: none},
	{class: resources, name: "log flood, Go guest", lim: lim{"max_log_bytes": "16KiB"}, cmd: map[string]any{"op": "flood", "fd": 2}, status: broker.StatusLimit, err: `log limit limits.max_log_bytes (16KiB) reached`, calls: none},
	{class: resources, name: "host_call flood, refused calls", lim: lim{"max_host_calls": "20"}, js: `for (;;) await api.get("/admin");`, status: broker.StatusLimit, err: `host call limit limits.max_host_calls (20) reached`, calls: broker.Counters{HostCalls: 20, Denied: 20}},
	{class: resources, name: "host_call flood past the budget", lim: lim{"max_host_calls": "10", "budget": "3"}, js: `for (;;) await api.get("/pets/1");`, status: broker.StatusLimit, err: `host call limit limits.max_host_calls (10) reached`, calls: broker.Counters{HostCalls: 10, Forwarded: 3, OverBudget: 7}},
	{class: resources, name: "host_call flood, Go guest", lim: lim{"max_host_calls": "50"}, cmd: map[string]any{"op": "call", "n": 1000000, "envelope": `{"method":"GET","path":"/admin"}`, "cap": 4096}, status: broker.StatusLimit, err: `host call limit limits.max_host_calls (50) reached`, calls: broker.Counters{HostCalls: 50, Denied: 50}},
	{class: resources, name: "cancel while a call is upstream", lim: lim{"call_timeout": "1h"}, js: `await api.get("/fault/hold"); return "unreachable";`, cancel: true, hold: true, status: broker.StatusError, err: `run canceled by the caller`, calls: failed},
	{class: resources, name: "run deadline while a call is upstream", lim: lim{"call_timeout": "1h", "run_timeout": "400ms"}, js: `await api.get("/fault/hold"); return "unreachable";`, hold: true, status: broker.StatusTimeout, err: `limits.run_timeout (400ms) passed`, calls: failed},
	{class: resources, name: "request pointer past the end of memory", cmd: goRaw(0x7ff00000, 16, -1, 256), want: "-1", calls: invalid, check: traceReason("lies outside guest memory")},
	{class: resources, name: "request ptr+len wraps around 2^32", cmd: goRaw(0xfffffff0, 0x20, -1, 256), want: "-1", calls: invalid, check: traceReason("lies outside guest memory")},
	{class: resources, name: "request length of 2^31", cmd: goRaw(-1, 0x80000000, -1, 256), want: "-1", calls: invalid, check: traceReason("lies outside guest memory")},
	{class: resources, name: "response ptr+cap wraps around 2^32", cmd: goRaw(-1, 27, 0xffffff00, 0x200), want: "-1", calls: invalid, check: traceReason("lies outside guest memory")},
	{class: resources, name: "response capacity past the end of memory", cmd: goRaw(-1, 27, -1, 0x7fffffff), want: "-1", calls: invalid, check: traceReason("lies outside guest memory")},
	{class: resources, name: "host_response with nothing pending", cmd: map[string]any{"op": "raw", "fn": "host_response", "args": []int64{-1, 256}}, want: "-2", calls: none},
	{class: resources, name: "host_response out of bounds", cmd: map[string]any{"op": "raw", "fn": "host_response", "pending": true, "args": []int64{0xfffffff0, 0x100}}, want: "-1", calls: denied},
	{class: resources, name: "host_response into a buffer too small", cmd: map[string]any{"op": "raw", "fn": "host_response", "pending": true, "args": []int64{-1, 4}}, want: "-3", calls: denied},
}

func TestSecurityResources(t *testing.T) { runSecCases(t, resourceCases) }

// traceReason checks the reason of the run's one trace entry.
func traceReason(want string) func(*testing.T, host.Result, *recorder) {
	return func(t *testing.T, res host.Result, _ *recorder) {
		t.Helper()
		require.Len(t, res.Trace, 1)
		require.Contains(t, res.Trace[0].Reason, want)
	}
}
