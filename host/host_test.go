package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/guests/testguest"
	"github.com/plimsoll/plimsoll/hostfuncs"
	"github.com/plimsoll/plimsoll/profiles"
)

func goGuest() Tool { return WasmTool("testguest", testguest.Wasm()) }

func TestJSToolEndToEnd(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	tool := JSTool("pets.js", `
		const a = await api.get("/pets/42");
		const b = await api.get("/pets/" + input.id);
		console.log("fetched", a.status, b.status);
		return {first: a.json().name, second: b.json().id};
	`)

	res := shared(t).Run(context.Background(), tool, p, []byte(`{"id":"7"}`))

	require.NoError(t, res.Err)
	require.JSONEq(t, `{"first":"Rex","second":"7"}`, string(res.Output))
	require.Equal(t, "fetched 200 200\n", string(res.Log))
	require.Len(t, res.Trace, 2)
	for i, e := range res.Trace {
		require.Equal(t, i+1, e.Seq)
		require.Equal(t, "GET", e.Method)
		require.Equal(t, "GET /pets/*", e.Route)
		require.Equal(t, broker.Forwarded, e.Outcome)
		require.Equal(t, 200, e.Status)
		require.Equal(t, 200, e.UpstreamStatus)
	}
	require.Equal(t, "/pets/42", res.Trace[0].Path)
	require.Equal(t, "/pets/7", res.Trace[1].Path)

	a := res.Audit
	require.Equal(t, broker.StatusOK, a.Status)
	require.Empty(t, a.Error)
	require.Equal(t, "pets", a.Profile)
	require.Equal(t, "pets.js", a.Tool)
	require.Len(t, a.RunID, 16)
	require.Equal(t, broker.Counters{HostCalls: 2, Forwarded: 2}, a.Counters)
	require.Equal(t, 100, a.BudgetCalls)
	require.Equal(t, int64(2), ps.requests.Load())
	require.Equal(t, []string{"Bearer " + secret, "Bearer " + secret}, ps.auth, "the broker adds the credential")
}

func TestDeniedAndInvalidCallsReachNothing(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	tool := JSTool("bad.js", `
		const out = [];
		for (const [path, opts] of [
			["/admin", undefined],                               // not granted
			["/pets", undefined],                                // GET /pets/* needs a segment
			["/pets/%2e%2e/admin", undefined],                   // encoded dots
			["/pets/1", {headers: {Authorization: "Bearer x"}}], // a header the guest may not set
		]) {
			const r = await api.get(path, opts);
			out.push(r.status + " " + r.outcome);
		}
		return out;
	`)

	res := shared(t).Run(context.Background(), tool, p, nil)

	require.NoError(t, res.Err)
	require.JSONEq(t, `["403 denied","403 denied","400 invalid","400 invalid"]`, string(res.Output))
	require.Equal(t, int64(0), ps.requests.Load(), "no request reached the upstream")
	require.Equal(t, broker.Counters{HostCalls: 4, Denied: 2, Invalid: 2}, res.Audit.Counters)
	require.Len(t, res.Trace, 4)
}

func TestCredentialNeverLeaks(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	// The upstream echoes the credential in a header and the body; the tool does its best to
	// publish whatever it is given.
	tool := JSTool("leak.js", `
		const r = await api.get("/echo");
		console.log("headers", JSON.stringify(r.headers), "body", r.body);
		console.error(JSON.stringify(r));
		throw new Error("got " + r.body + " " + JSON.stringify(r.headers));
	`)

	res := shared(t).Run(context.Background(), tool, p, nil)

	require.Equal(t, broker.StatusError, res.Audit.Status)
	require.Equal(t, []string{"Bearer " + secret}, ps.auth, "the upstream did get it")
	trace, err := json.Marshal(res.Trace)
	require.NoError(t, err)
	for name, b := range map[string][]byte{
		"output": res.Output, "log": res.Log, "trace": trace, "audit": res.Audit.Line(), "error": []byte(res.Err.Error()),
	} {
		require.NotContains(t, string(b), secret, name)
	}
	require.Contains(t, string(res.Log), broker.Redacted)
}

func TestLimits(t *testing.T) {
	ps := newPetstore(t)
	tests := []struct {
		name    string
		limits  string
		tool    Tool
		input   []byte
		limit   string // LimitError.Limit; "" for a timeout
		message string
	}{
		{
			name: "run timeout, tight JS loop", limits: "run_timeout: 300ms",
			tool: JSTool("loop.js", `while (true) {}`), message: "run timed out: limits.run_timeout (300ms) passed",
		},
		{
			name: "run timeout, Go guest spinning", limits: "run_timeout: 300ms",
			tool: goGuest(), input: guestCmd(map[string]any{"op": "loop"}),
			message: "run timed out: limits.run_timeout (300ms) passed",
		},
		{
			name: "memory, JS", limits: "memory: 48MiB",
			tool:  JSTool("oom.js", `const keep = []; while (true) keep.push(new ArrayBuffer(1 << 20));`),
			limit: "limits.memory", message: "memory limit limits.memory (48MiB) reached",
		},
		{
			name: "memory, Go guest", limits: "memory: 32MiB",
			tool: goGuest(), input: guestCmd(map[string]any{"op": "oom"}),
			limit: "limits.memory", message: "memory limit limits.memory (32MiB) reached",
		},
		{
			name: "output cap, JS result", limits: "max_output_bytes: 1KiB",
			tool:  JSTool("big.js", `return "x".repeat(5000);`),
			limit: "limits.max_output_bytes", message: "output limit limits.max_output_bytes (1KiB) reached",
		},
		{
			name: "output cap, Go guest flood", limits: "max_output_bytes: 64KiB",
			tool: goGuest(), input: guestCmd(map[string]any{"op": "flood", "fd": 1}),
			limit: "limits.max_output_bytes", message: "output limit limits.max_output_bytes (64KiB) reached",
		},
		{
			name: "log cap, JS console", limits: "max_log_bytes: 4KiB",
			tool:  JSTool("chatty.js", `while (true) console.log("spam spam spam");`),
			limit: "limits.max_log_bytes", message: "log limit limits.max_log_bytes (4KiB) reached",
		},
		{
			name: "log cap, Go guest flood", limits: "max_log_bytes: 64KiB",
			tool: goGuest(), input: guestCmd(map[string]any{"op": "flood", "fd": 2}),
			limit: "limits.max_log_bytes", message: "log limit limits.max_log_bytes (64KiB) reached",
		},
		{
			name: "max host calls, JS", limits: "max_host_calls: 3",
			tool:  JSTool("calls.js", `for (let i = 0; i < 10; i++) await api.get("/pets/" + i);`),
			limit: "limits.max_host_calls", message: "host call limit limits.max_host_calls (3) reached",
		},
		{
			name: "max host calls, Go guest", limits: "max_host_calls: 3",
			tool: goGuest(), input: guestCmd(map[string]any{"op": "call", "n": 10, "envelope": `{"method":"GET","path":"/pets/1"}`, "cap": 4096}),
			limit: "limits.max_host_calls", message: "host call limit limits.max_host_calls (3) reached",
		},
		{
			name: "JS call-stack depth", tool: JSTool("deep.js", `function f(n) { return f(n + 1) + 1; } return f(0);`),
			limit: "guest", message: "guest limit: call stack depth exceeded (* KiB of stack)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := profile(t, ps.URL, "limits:\n  "+tc.limits+"\n")

			res := shared(t).Run(context.Background(), tc.tool, p, tc.input)

			require.Error(t, res.Err)
			requireMatch(t, tc.message, res.Err.Error())
			require.Equal(t, res.Err.Error(), res.Audit.Error)
			require.NotEmpty(t, res.Audit.RunID)
			if tc.limit == "" {
				require.Equal(t, broker.StatusTimeout, res.Audit.Status)
				require.ErrorIs(t, res.Err, ErrTimeout)
				require.ErrorIs(t, res.Err, context.DeadlineExceeded)
				return
			}
			require.Equal(t, broker.StatusLimit, res.Audit.Status)
			require.ErrorIs(t, res.Err, ErrLimit)
			var le *LimitError
			require.ErrorAs(t, res.Err, &le)
			require.Equal(t, tc.limit, le.Limit)
		})
	}
}

// requireMatch checks got against want, where a * in want stands for one number.
func requireMatch(t *testing.T, want, got string) {
	t.Helper()
	pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(want), `\*`, `[0-9]+`) + "$"
	require.Regexp(t, pattern, got)
}

func TestLimitsKeepWhatFits(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "limits:\n  max_output_bytes: 1KiB\n  max_log_bytes: 1KiB\n  max_host_calls: 3\n")

	res := shared(t).Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "flood", "fd": 1, "n": 1024}))
	require.NoError(t, res.Err, "exactly the cap is allowed")
	require.Len(t, res.Output, 1024)

	res = shared(t).Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "flood", "fd": 1, "n": 1025}))
	require.ErrorIs(t, res.Err, ErrLimit)
	require.Len(t, res.Output, 1024, "the output up to the cap is kept")

	res = shared(t).Run(context.Background(), JSTool("calls.js", `for (let i = 0; i < 10; i++) await api.get("/pets/" + i);`), p, nil)
	require.ErrorIs(t, res.Err, ErrLimit)
	require.Len(t, res.Trace, 3)
	require.Equal(t, broker.Counters{HostCalls: 3, Forwarded: 3}, res.Audit.Counters)
	require.Equal(t, int64(3), ps.requests.Load())
}

func TestMemoryLimitBelowTheModulesMinimum(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	p.Limits.Memory = 1 << 20 // a profile built in code; LoadFile refuses under 16MiB

	res := shared(t).Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "state"}))

	require.Equal(t, broker.StatusLimit, res.Audit.Status)
	need := profiles.FormatSize(int64(exportedMinPages(t, testguest.Wasm())) * wasmPage)
	require.EqualError(t, res.Err, "memory limit limits.memory (1MiB) is below the "+need+" the module needs to start")
	var le *LimitError
	require.ErrorAs(t, res.Err, &le)
	require.Equal(t, "limits.memory", le.Limit)
}

func TestToolFailures(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	tests := []struct {
		name     string
		tool     Tool
		input    []byte
		exitCode int
		message  string
	}{
		{"JS throws", JSTool("throw.js", "console.log('about to fail');\nthrow new Error('boom');"), nil, 1,
			"tool failed: Uncaught Error: boom\n    at throw.js:2:11"},
		{"JS rejects", JSTool("reject.js", `await Promise.reject(new TypeError("nope"));`), nil, 1,
			"tool failed: Uncaught TypeError: nope"},
		{"JS does not compile", JSTool("syntax.js", `return (;`), nil, 1,
			"tool failed: plimsoll: the tool does not compile"},
		{"Go guest returns 1", goGuest(), guestCmd(map[string]any{"op": "fail", "msg": "no such pet"}), 1,
			"tool failed: no such pet"},
		{"Go guest panics", goGuest(), guestCmd(map[string]any{"op": "panic", "msg": "kaboom"}), -1,
			"tool failed: panic: kaboom (wasm error: unreachable)"},
		{"command exits 3", WasmTool("exit3", commandModule(3)), nil, 3,
			"tool failed with exit code 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := shared(t).Run(context.Background(), tc.tool, p, tc.input)

			require.Equal(t, broker.StatusError, res.Audit.Status)
			var te *ToolError
			require.ErrorAs(t, res.Err, &te)
			require.Equal(t, tc.exitCode, te.ExitCode)
			require.True(t, strings.HasPrefix(res.Err.Error(), tc.message), "got %q", res.Err.Error())
			require.Equal(t, res.Err.Error(), res.Audit.Error)
		})
	}
}

func TestCommandModuleExitingZeroSucceeds(t *testing.T) {
	ps := newPetstore(t)
	for _, bin := range [][]byte{commandModule(0), commandModule(-1)} {
		res := shared(t).Run(context.Background(), WasmTool("cmd", bin), profile(t, ps.URL, ""), nil)
		require.NoError(t, res.Err)
		require.Equal(t, broker.StatusOK, res.Audit.Status)
	}
}

func TestSetupFailuresStillAudit(t *testing.T) {
	ps := newPetstore(t)
	dir := t.TempDir()
	preamble := filepath.Join(dir, "pets.preamble.js")
	require.NoError(t, os.WriteFile(preamble, []byte("globalThis.petsPreamble = true;"), 0o644))
	withPreamble := profile(t, ps.URL, "preamble: "+preamble+"\n")
	require.NoError(t, os.Remove(preamble)) // gone between load and run
	noSecret := profile(t, ps.URL, "")
	noSecret.Credential.Env = "PETS_TOKEN_UNSET"
	js := JSTool("t.js", `return await api.get("/pets/1");`)

	tests := []struct {
		name    string
		tool    Tool
		p       *profiles.Profile
		input   []byte
		message string
	}{
		{"credential unresolvable", js, noSecret, nil,
			"resolve the credential: credential not available: profile pets: environment variable PETS_TOKEN_UNSET is not set or empty"},
		{"preamble unreadable", js, withPreamble, nil, "read the preamble: profile pets: preamble: open " + preamble},
		{"input not JSON", js, profile(t, ps.URL, ""), []byte(`{"id":`), "read the input: the input is not valid JSON"},
		{"imports env.foo", WasmTool("foo", testguest.ImportsEnvFoo), profile(t, ps.URL, ""), nil,
			"check the module's imports: guest imports env.foo, which plimsoll does not provide " +
				"(allowed: wasi_snapshot_preview1, plimsoll.host_call, plimsoll.host_response, plimsoll.host_submit, plimsoll.host_wait, plimsoll.host_result)"},
		{"not wasm", WasmTool("junk", []byte("\x00asm junk")), profile(t, ps.URL, ""), nil, "compile the module: "},
		{"empty tool", Tool{Name: "nothing"}, profile(t, ps.URL, ""), nil,
			"load the tool: the tool has no kind: build it with ToolFromSource or a kind's constructor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := shared(t).Run(context.Background(), tc.tool, tc.p, tc.input)

			require.ErrorIs(t, res.Err, ErrSetup)
			require.True(t, strings.HasPrefix(res.Err.Error(), tc.message), "got %q", res.Err.Error())
			require.Equal(t, broker.StatusError, res.Audit.Status)
			require.Equal(t, res.Err.Error(), res.Audit.Error)
			require.Equal(t, "pets", res.Audit.Profile)
			require.Equal(t, tc.tool.Name, res.Audit.Tool)
			require.NotEmpty(t, res.Audit.RunID)
			require.Zero(t, res.Audit.HostCalls)
		})
	}
	require.Equal(t, int64(0), ps.requests.Load())

	t.Run("no profile", func(t *testing.T) {
		res := shared(t).Run(context.Background(), js, nil, nil)
		require.ErrorIs(t, res.Err, ErrSetup)
		require.Equal(t, broker.StatusError, res.Audit.Status)
		require.Equal(t, "load the profile: no profile given", res.Audit.Error)
		require.NotEmpty(t, res.Audit.RunID)
	})
}

func TestImportCheckNamesTheImport(t *testing.T) {
	res := shared(t).Run(context.Background(), WasmTool("foo", testguest.ImportsEnvFoo), profile(t, "http://127.0.0.1:1", ""), nil)
	var ie *hostfuncs.ImportError
	require.ErrorAs(t, res.Err, &ie)
	require.Equal(t, "env.foo", ie.Module+"."+ie.Name)
}

func TestJSSeesNoEscapes(t *testing.T) {
	ps := newPetstore(t)
	tool := JSTool("escape.js", `
		return {
			require: typeof require, fetch: typeof fetch, process: typeof process,
			XMLHttpRequest: typeof XMLHttpRequest, WebAssembly: typeof WebAssembly,
			plimsoll: typeof __plimsoll, setTimeout: typeof setTimeout,
			now: Date.now(), random: [Math.random(), Math.random()],
		};
	`)
	before := time.Now().UnixMilli()
	res := shared(t).Run(context.Background(), tool, profile(t, ps.URL, ""), nil)
	after := time.Now().UnixMilli()
	require.NoError(t, res.Err)

	var got struct {
		Require, Fetch, Process, XMLHttpRequest, WebAssembly, Plimsoll, SetTimeout string
		Now                                                                        int64
		Random                                                                     []float64
	}
	require.NoError(t, json.Unmarshal(res.Output, &got))
	for name, v := range map[string]string{"require": got.Require, "fetch": got.Fetch, "process": got.Process,
		"XMLHttpRequest": got.XMLHttpRequest, "WebAssembly": got.WebAssembly, "__plimsoll": got.Plimsoll} {
		require.Equal(t, "undefined", v, name)
	}
	require.GreaterOrEqual(t, got.Now, before, "Date.now() is the real clock, not wazero's 2022")
	require.LessOrEqual(t, got.Now, after)
	require.NotEqual(t, got.Random[0], got.Random[1])
}

func TestGoGuestSeesNoEscapes(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	type view struct {
		Args      []string `json:"args"`
		Environ   []string `json:"environ"`
		ReadFile  string   `json:"read_file"`
		ReadDir   string   `json:"read_dir"`
		UnixMs    int64    `json:"unix_ms"`
		Random    string   `json:"random"`
		RandomErr string   `json:"random_err"`
	}
	look := func() view {
		before := time.Now().UnixMilli()
		res := shared(t).Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "env"}))
		after := time.Now().UnixMilli()
		require.NoError(t, res.Err)
		var v view
		require.NoError(t, json.Unmarshal(res.Output, &v))
		require.GreaterOrEqual(t, v.UnixMs, before)
		require.LessOrEqual(t, v.UnixMs, after)
		return v
	}

	a, b := look(), look()

	require.Empty(t, a.Args)
	require.Empty(t, a.Environ, "no environment: the credential's variable is not visible")
	require.NotEmpty(t, a.ReadFile, "no filesystem")
	require.NotEmpty(t, a.ReadDir, "no filesystem")
	require.Empty(t, a.RandomErr)
	require.NotEqual(t, a.Random, b.Random, "randomness is not wazero's deterministic default")
}

func TestRunsShareNoState(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	tool := JSTool("state.js", `
		const seen = typeof globalThis.leak;
		globalThis.leak = "from an earlier run";
		Object.prototype.polluted = true;
		return [seen, typeof ({}).polluted === "boolean" && seen !== "undefined"];
	`)
	check := func(t *testing.T, rt *Runtime) {
		for range 3 {
			res := rt.Run(context.Background(), tool, p, nil)
			require.NoError(t, res.Err)
			require.JSONEq(t, `["undefined", false]`, string(res.Output))
		}
	}
	t.Run("fresh instances", func(t *testing.T) { check(t, shared(t)) })
	t.Run("pooled instances", func(t *testing.T) { check(t, newRuntime(t, Options{PoolSize: 2})) })
	t.Run("Go guest", func(t *testing.T) {
		for range 2 {
			res := shared(t).Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "state"}))
			require.NoError(t, res.Err)
			require.Equal(t, "1\n", string(res.Output))
		}
	})
}

func TestPoolServesOtherMemoryLimits(t *testing.T) {
	ps := newPetstore(t)
	rt := newRuntime(t, Options{PoolSize: 1})
	for _, mem := range []string{"256MiB", "24MiB", "1GiB"} {
		p := profile(t, ps.URL, "limits:\n  memory: "+mem+"\n")
		res := rt.Run(context.Background(), JSTool("t.js", `return 1 + 1;`), p, nil)
		require.NoError(t, res.Err, mem)
		require.Equal(t, "2", string(res.Output))
	}
	// A pooled instance is bound to the run's limit, not the pool's.
	p := profile(t, ps.URL, "limits:\n  memory: 48MiB\n")
	res := rt.Run(context.Background(), JSTool("oom.js", `const keep = []; while (true) keep.push(new ArrayBuffer(1 << 20));`), p, nil)
	require.EqualError(t, res.Err, "memory limit limits.memory (48MiB) reached")
}

func TestGoGuestHostCallABI(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	envelope := `{"method":"GET","path":"/pets/9"}`

	t.Run("two-step fetch", func(t *testing.T) {
		res := shared(t).Run(context.Background(), goGuest(), p,
			guestCmd(map[string]any{"op": "call", "n": 2, "envelope": envelope, "cap": 8, "print": true}))
		require.NoError(t, res.Err)
		lines := strings.Split(strings.TrimSpace(string(res.Output)), "\n")
		require.Len(t, lines, 2)
		for _, l := range lines {
			var resp struct {
				Status int    `json:"status"`
				Body   string `json:"body"`
			}
			require.NoError(t, json.Unmarshal([]byte(l), &resp))
			require.Equal(t, 200, resp.Status)
			require.JSONEq(t, `{"id":"9","name":"Rex"}`, resp.Body)
		}
	})

	bounds := []struct {
		name string
		args []int64 // -1 is the guest's own buffer
	}{
		{"request past the end of memory", []int64{0x7ff00000, 16, -1, 256}},
		{"request ptr+len wraps around 2^32", []int64{0xfffffff0, 0x20, -1, 256}},
		{"response ptr+cap wraps around 2^32", []int64{-1, 27, 0xffffff00, 0x200}},
	}
	for _, tc := range bounds {
		t.Run(tc.name, func(t *testing.T) {
			res := shared(t).Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "raw", "args": tc.args}))
			require.NoError(t, res.Err)
			require.Equal(t, "-1\n", string(res.Output))
			require.Equal(t, broker.Counters{HostCalls: 1, Invalid: 1}, res.Audit.Counters)
			require.Len(t, res.Trace, 1)
			require.Equal(t, broker.Invalid, res.Trace[0].Outcome)
			require.Contains(t, res.Trace[0].Reason, "lies outside guest memory")
		})
	}

	t.Run("over max_request_bytes", func(t *testing.T) {
		p := profile(t, ps.URL, "limits:\n  max_request_bytes: 1KiB\n")
		big := `{"method":"GET","path":"/pets/1","body":"` + strings.Repeat("x", 2000) + `"}`
		res := shared(t).Run(context.Background(), goGuest(), p,
			guestCmd(map[string]any{"op": "call", "n": 1, "envelope": big, "cap": 4096, "print": true}))
		require.NoError(t, res.Err)
		require.Contains(t, string(res.Output), `"status":400`)
		require.Equal(t, broker.Counters{HostCalls: 1, Invalid: 1}, res.Audit.Counters)
		require.Equal(t, fmt.Sprintf("request envelope is %d bytes, over limits.max_request_bytes (1KiB)", len(big)), res.Trace[0].Reason)
	})
	require.Equal(t, int64(2), ps.requests.Load(), "only the two-step calls were forwarded")
}

func TestCancelDuringSleep(t *testing.T) {
	ps := newPetstore(t)
	// Each call closes its connection, so the goroutine count measures the run, not an idle
	// keep-alive connection that outlives it.
	ps.Config.SetKeepAlivesEnabled(false)
	p := profile(t, ps.URL, "")
	// The upstream tells the test that the guest is running; the guest then sleeps for an hour.
	for _, tc := range []struct {
		name string
		tool Tool
	}{
		{"JS", JSTool("sleepy.js", `await api.get("/pets/1"); sleep(3600e3); return "woke";`)},
		{"JS awaiting sleep", JSTool("sleepy.js", `await api.get("/pets/1"); await sleep(3600e3); return "woke";`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := shared(t)
			base := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-ps.hits; cancel() }()

			res := rt.Run(ctx, tc.tool, p, nil)

			require.Equal(t, broker.StatusError, res.Audit.Status)
			require.ErrorIs(t, res.Err, ErrCancel)
			require.ErrorIs(t, res.Err, context.Canceled)
			require.Equal(t, "run canceled by the caller", res.Audit.Error)
			require.Empty(t, res.Output)
			requireGoroutinesBackTo(t, base)
		})
	}

	t.Run("caller's deadline", func(t *testing.T) {
		base := runtime.NumGoroutine()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		res := shared(t).Run(ctx, goGuest(), p, guestCmd(map[string]any{"op": "sleep", "ms": 3600e3}))
		require.Equal(t, broker.StatusTimeout, res.Audit.Status)
		require.EqualError(t, res.Err, "run timed out: the caller's deadline passed")
		var te *TimeoutError
		require.ErrorAs(t, res.Err, &te)
		require.Empty(t, te.Limit)
		requireGoroutinesBackTo(t, base)
	})

	t.Run("sleep ends at the run timeout", func(t *testing.T) {
		p := profile(t, ps.URL, "limits:\n  run_timeout: 200ms\n")
		res := shared(t).Run(context.Background(), JSTool("sleepy.js", `sleep(3600e3); return "woke";`), p, nil)
		require.Equal(t, broker.StatusTimeout, res.Audit.Status)
		require.ErrorIs(t, res.Err, ErrTimeout)
	})

	t.Run("short sleeps really sleep", func(t *testing.T) {
		before := time.Now()
		res := shared(t).Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "sleep", "ms": 50}))
		require.NoError(t, res.Err)
		require.Equal(t, "slept\n", string(res.Output))
		require.GreaterOrEqual(t, time.Since(before), 50*time.Millisecond, "wazero's default sleep returns at once")
	})
}

// requireGoroutinesBackTo waits, by yielding rather than sleeping, for goroutines that a finished
// run leaves behind to exit (wazero's per-call context watcher exits just after the call).
func requireGoroutinesBackTo(t *testing.T, base int) {
	t.Helper()
	for i := 0; i < 100000 && runtime.NumGoroutine() > base; i++ {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, want at most %d:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

func TestMaxConcurrentQueuesRuns(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	rt := newRuntime(t, Options{MaxConcurrent: 1})

	first, stopFirst := context.WithCancel(context.Background())
	done := make(chan Result)
	go func() {
		done <- rt.Run(first, JSTool("holder.js", `await api.get("/pets/1"); sleep(3600e3);`), p, nil)
	}()
	<-ps.hits // the first run holds the only slot

	waiting, giveUp := context.WithCancel(context.Background())
	giveUp()
	res := rt.Run(waiting, JSTool("queued.js", `return 1;`), p, nil)
	require.ErrorIs(t, res.Err, ErrCancel)
	require.Equal(t, broker.StatusError, res.Audit.Status)
	require.Zero(t, res.Audit.HostCalls)

	stopFirst()
	require.ErrorIs(t, (<-done).Err, ErrCancel)
	res = rt.Run(context.Background(), JSTool("next.js", `return 1;`), p, nil)
	require.NoError(t, res.Err, "the slot is free again")
}

func TestRunAfterClose(t *testing.T) {
	rt, err := New(context.Background(), Options{CacheDir: testCacheDir(), PoolSize: 1})
	require.NoError(t, err)
	require.NoError(t, rt.Close(context.Background()))
	require.NoError(t, rt.Close(context.Background()), "Close is idempotent")

	res := rt.Run(context.Background(), JSTool("t.js", `return 1;`), profile(t, "http://127.0.0.1:1", ""), nil)
	require.ErrorIs(t, res.Err, ErrClosed)
	require.Equal(t, broker.StatusError, res.Audit.Status)
	require.Equal(t, "host runtime is closed", res.Audit.Error)
}

func TestCloseStopsRunningGuests(t *testing.T) {
	ps := newPetstore(t)
	rt, err := New(context.Background(), Options{CacheDir: testCacheDir(), Getenv: testGetenv})
	require.NoError(t, err)
	done := make(chan Result)
	go func() {
		done <- rt.Run(context.Background(), JSTool("spin.js", `await api.get("/pets/1"); while (true) {}`), profile(t, ps.URL, ""), nil)
	}()
	<-ps.hits
	require.NoError(t, rt.Close(context.Background()))
	res := <-done
	require.ErrorIs(t, res.Err, ErrClosed)
	require.Equal(t, broker.StatusError, res.Audit.Status)
	require.Equal(t, 1, res.Audit.HostCalls)
}

func TestConcurrentRuns(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	rt := newRuntime(t, Options{PoolSize: 2, MaxConcurrent: 3})
	const n = 8
	results := make(chan Result, n)
	for i := range n {
		go func() {
			results <- rt.Run(context.Background(), JSTool("c.js", `return (await api.get("/pets/`+strconv.Itoa(i)+`")).json().id;`), p, nil)
		}()
	}
	seen := map[string]bool{}
	for range n {
		res := <-results
		require.NoError(t, res.Err)
		seen[string(res.Output)] = true
		require.Equal(t, 1, res.Audit.Forwarded)
	}
	require.Len(t, seen, n)
}

// commandModule is a WASI command whose _start calls proc_exit(code), or returns normally when
// code is negative.
func commandModule(code int) []byte {
	body := []byte{0x00, 0x0b} // no locals; end
	if code >= 0 {
		body = []byte{0x00, 0x41, byte(code), 0x10, 0x00, 0x0b} // no locals; i32.const code; call 0; end
	}
	var b bytes.Buffer
	b.Write([]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00})
	section := func(id byte, content ...byte) { b.WriteByte(id); b.WriteByte(byte(len(content))); b.Write(content) }
	section(0x01, 0x02, 0x60, 0x01, 0x7f, 0x00, 0x60, 0x00, 0x00) // types: (i32) -> (), () -> ()
	imp := []byte{0x01, 22}
	imp = append(imp, "wasi_snapshot_preview1"...)
	imp = append(imp, 9)
	imp = append(imp, "proc_exit"...)
	section(0x02, append(imp, 0x00, 0x00)...)                           // import proc_exit as function 0, type 0
	section(0x03, 0x01, 0x01)                                           // one function, type 1
	section(0x05, 0x01, 0x00, 0x01)                                     // one memory, at least one page
	section(0x07, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x01) // export function 1 as _start
	section(0x0a, append([]byte{0x01, byte(len(body))}, body...)...)    // its code
	return b.Bytes()
}

func TestLogReason(t *testing.T) {
	tests := []struct {
		name, log string
		goCrash   bool
		want      string
	}{
		{"empty", "", false, ""},
		{"last line", "working\nno such pet\n", false, "no such pet"},
		{"JS uncaught with stack", "log line\nUncaught Error: boom\n    at f (t.js:2:3)\n    at t.js:5:1\n", false,
			"Uncaught Error: boom\n    at f (t.js:2:3)\n    at t.js:5:1"},
		{"Go panic", "log\npanic: kaboom\n\ngoroutine 1 [running]:\nmain.run()\n\t/x.go:1 +0x1\n", true, "panic: kaboom"},
		{"Go fatal error", "fatal error: out of memory\n\nruntime stack:\nruntime.throw()\n", true, "fatal error: out of memory"},
		{"panic text without a crash", "panic: is just a word here\nreal reason\n", false, "real reason"},
		{"long reason is cut", strings.Repeat("é", 3000), false, strings.Repeat("é", 1024) + "…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, logReason([]byte(tc.log), tc.goCrash))
		})
	}
}

func TestStatusOf(t *testing.T) {
	require.Equal(t, broker.StatusOK, statusOf(nil))
	require.Equal(t, broker.StatusLimit, statusOf(&LimitError{Limit: "limits.memory"}))
	require.Equal(t, broker.StatusLimit, statusOf(callLimit(&hostfuncs.CallLimitError{Max: 1})))
	require.Equal(t, broker.StatusTimeout, statusOf(&TimeoutError{}))
	require.Equal(t, broker.StatusError, statusOf(&ToolError{ExitCode: 1}))
	require.Equal(t, broker.StatusError, statusOf(&canceled{}))
	require.Equal(t, broker.StatusError, statusOf(ErrClosed))
	require.Equal(t, broker.StatusError, statusOf(setupError("x", errors.New("y"))))
}

func TestMemoryAllocator(t *testing.T) {
	m := &memory{limit: 4 * wasmPage}
	lm := m.Allocate(wasmPage, 0)
	require.Len(t, lm.Reallocate(wasmPage), wasmPage)
	copy(m.linears[0].buf, "kept")
	grown := lm.Reallocate(4 * wasmPage)
	require.Len(t, grown, 4*wasmPage)
	require.Equal(t, "kept", string(grown[:4]))
	require.Nil(t, lm.Reallocate(5*wasmPage))
	require.Equal(t, uint64(5*wasmPage), m.refused)
	require.Len(t, m.linears[0].buf, 4*wasmPage, "a refused growth leaves the memory as it was")
}

func TestDeclaredMinPages(t *testing.T) {
	pages, ok := declaredMinPages(testguest.Wasm())
	require.True(t, ok)
	require.Equal(t, exportedMinPages(t, testguest.Wasm()), pages, "as wazero's own decoder reads it")
	pages, ok = declaredMinPages(commandModule(0))
	require.True(t, ok)
	require.Equal(t, uint64(1), pages)
	_, ok = declaredMinPages(testguest.ImportsEnvFoo)
	require.False(t, ok, "no memory section")
	_, ok = declaredMinPages([]byte("\x00asm\x01\x00\x00\x00\x05\xff"))
	require.False(t, ok, "truncated")
}

// exportedMinPages is the minimum of a module's exported memory as wazero decodes it: an oracle
// for declaredMinPages that does not share its code.
func exportedMinPages(t *testing.T, bin []byte) uint64 {
	t.Helper()
	m, err := shared(t).r.CompileModule(context.Background(), bin)
	require.NoError(t, err)
	defer m.Close(context.Background())
	mem, ok := m.ExportedMemories()["memory"]
	require.True(t, ok, "the module exports its memory")
	return uint64(mem.Min())
}

// One budget covers every memory of an instance (a plugin and its kernel, say): what one takes,
// another cannot.
func TestMemoryBudgetIsShared(t *testing.T) {
	m := &memory{limit: 4 * wasmPage}
	a, b := m.Allocate(wasmPage, 4*wasmPage), m.Allocate(wasmPage, 4*wasmPage)
	defer m.release()
	require.Len(t, a.Reallocate(3*wasmPage), 3*wasmPage)
	require.Len(t, b.Reallocate(wasmPage), wasmPage)
	require.Nil(t, b.Reallocate(2*wasmPage), "3 + 2 pages are over the 4 the budget holds")
	require.Equal(t, uint64(2*wasmPage), m.refused)
	require.Len(t, a.Reallocate(2*wasmPage), 2*wasmPage, "a memory may shrink")
	require.Len(t, b.Reallocate(2*wasmPage), 2*wasmPage, "and what it gave back is free")
}
