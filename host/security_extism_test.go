package host_test

// Hostile Extism plugins (issue 17): the Go PDK test plugin (guests/testplugin) through the real
// host and go-sdk against the suite's loopback upstream. Each case checks the run's status and
// error, what the plugin saw, the one audit line and its trace, that nothing reached the
// upstream for a refusal, and that the credential shows up nowhere.

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/guests/testguest"
	"github.com/plimsoll/plimsoll/guests/testplugin"
	"github.com/plimsoll/plimsoll/host"
)

// pluginCase is one hostile plugin.
type pluginCase struct {
	name  string
	cmd   func(upstream string) map[string]any // the plugin's command; upstream is the recorder's URL
	tool  host.Tool                            // when not the test plugin's run
	lim   lim
	want  string // what the plugin output, as guestView shows it ("" for anything)
	calls broker.Counters
	stat  broker.Status // "" means ok
	err   []string      // parts of the run's error
	check func(t *testing.T, res host.Result)
}

func plugin() host.Tool { return host.WasmTool("testplugin.wasm", testplugin.Wasm()) }

func pluginCmd(fields map[string]any) func(string) map[string]any {
	return func(string) map[string]any { return fields }
}

func pluginCall(envelope string) func(string) map[string]any {
	return pluginCmd(map[string]any{"op": "call", "envelope": envelope})
}

var pluginCases = []pluginCase{
	{name: "plimsoll_call is forwarded with the credential", cmd: pluginCall(`{"method":"GET","path":"/pets/1"}`),
		want: "200 forwarded ok GET /v1/pets/1", calls: fwd1},
	{name: "plimsoll_call off the grant is denied", cmd: pluginCall(`{"method":"DELETE","path":"/pets/1"}`),
		want: "403 denied", calls: denied},
	{name: "plimsoll_call with a broken envelope is invalid", cmd: pluginCall(`{"method":`),
		want: "400 invalid", calls: invalid},
	{name: "plimsoll_call over max_request_bytes", lim: lim{"max_request_bytes": "1KiB"},
		cmd:  pluginCall(`{"method":"POST","path":"/pets","body":"` + strings.Repeat("x", 1100) + `"}`),
		want: "400 invalid | over limits.max_request_bytes (1KiB)", calls: invalid},
	{name: "plimsoll_call past max_host_calls ends the run", lim: lim{"max_host_calls": "3"},
		cmd:   pluginCmd(map[string]any{"op": "calls", "n": 5, "envelope": `{"method":"GET","path":"/pets/1"}`}),
		calls: broker.Counters{HostCalls: 3, Forwarded: 3}, stat: broker.StatusLimit, err: []string{"limits.max_host_calls (3)"}},
	{name: "bad offset 0 to plimsoll_call", cmd: pluginCmd(map[string]any{"op": "raw", "offset": 0}),
		want: "400 invalid plimsoll_call: offset 0 is not an Extism memory block", calls: invalid},
	{name: "bad offset inside memory, not a block", cmd: pluginCmd(map[string]any{"op": "raw", "offset": 12345}),
		want: "400 invalid plimsoll_call: offset 12345 is not an Extism memory block", calls: invalid},
	{name: "bad offset past the memory", cmd: pluginCmd(map[string]any{"op": "raw", "offset": uint64(1) << 40}),
		want: "400 invalid plimsoll_call: offset 1099511627776 is not an Extism memory block", calls: invalid},
	{name: "http_request to the granted upstream sends nothing", cmd: func(up string) map[string]any {
		return map[string]any{"op": "http", "url": up + "/v1/pets/1"}
	}, stat: broker.StatusError, err: []string{"http_request to http://127.0.0.1:", "nothing was sent", "plimsoll_call"}},
	{name: "http_request to an allowed-looking host sends nothing",
		cmd:  pluginCmd(map[string]any{"op": "http", "url": "http://localhost.api.example.com/v1/pets/1"}),
		stat: broker.StatusError, err: []string{"http_request to http://localhost.api.example.com/v1/pets/1", "plimsoll_call"}},
	{name: "var_set flood ends at the variable store limit",
		cmd:  pluginCmd(map[string]any{"op": "vars", "n": 100000, "size": 512}),
		stat: broker.StatusLimit, err: []string{"plugin variable store limit (64KiB) reached: var_set refused"}},
	{name: "config_get finds no credential", cmd: pluginCmd(map[string]any{"op": "config",
		"keys": []string{secEnv, "token", "credential", "secret", "api_key", "X-Api-Key", "Authorization", "base_url"}}),
		want: "{}"},
	{name: "Go heap growth past limits.memory", lim: lim{"memory": "64MiB"},
		cmd:  pluginCmd(map[string]any{"op": "grow", "mib": 256}),
		stat: broker.StatusLimit, err: []string{"memory limit limits.memory (64MiB) reached"}},
	{name: "Extism memory growth past limits.memory", lim: lim{"memory": "64MiB"},
		cmd: pluginCmd(map[string]any{"op": "kalloc", "mib": 256}),
		check: func(t *testing.T, res host.Result) {
			// The kernel's alloc is refused when the kernel's and the plugin's memories together
			// would pass the limit: the plugin sees it fail, well before 64 MiB.
			require.Regexp(t, `^alloc \d+ failed$`, string(res.Output))
			var n int
			fmt.Sscanf(string(res.Output), "alloc %d failed", &n)
			require.Less(t, n, 64)
		}},
	{name: "a plugin that never returns ends at run_timeout", lim: lim{"run_timeout": "1s"},
		cmd:  pluginCmd(map[string]any{"op": "spin"}),
		stat: broker.StatusTimeout, err: []string{"run timed out: limits.run_timeout (1s) passed"}},
	{name: "huge output ends at max_output_bytes", lim: lim{"max_output_bytes": "64KiB"},
		cmd:  pluginCmd(map[string]any{"op": "output", "bytes": 4 << 20}),
		stat: broker.StatusLimit, err: []string{"output limit limits.max_output_bytes (64KiB) reached"}},
	{name: "the plugin's error is the run's", cmd: pluginCmd(map[string]any{"op": "fail", "text": "no such pet"}),
		stat: broker.StatusError, err: []string{"tool failed: no such pet"}},
	{name: "logs go to the run log", cmd: pluginCmd(map[string]any{"op": "log", "text": "hello"}),
		check: func(t *testing.T, res host.Result) {
			require.Contains(t, string(res.Log), "info: hello\n")
			require.Contains(t, string(res.Log), "stderr: hello\n")
		}},
	{name: "a function the plugin does not export", tool: host.ExtismTool("testplugin.wasm", testplugin.Wasm(), "nope"),
		cmd:  pluginCmd(map[string]any{"op": "noop"}),
		stat: broker.StatusError, err: []string{`the plugin exports no function "nope" (name another with --function)`}},
	{name: "a plimsoll-ABI guest run as a plugin is refused by its imports", tool: host.ExtismTool("testguest", testguest.Wasm(), ""),
		cmd:  pluginCmd(map[string]any{"op": "noop"}),
		stat: broker.StatusError, err: []string{"the plugin imports plimsoll.host_call", "-tags plimsoll_extism"}},
}

func TestSecurityExtismPlugins(t *testing.T) {
	rt := newSecRuntime(t, host.Options{})
	for _, c := range pluginCases {
		t.Run(c.name, func(t *testing.T) { runPluginCase(t, rt, c) })
	}
}

func runPluginCase(t *testing.T, rt *host.Runtime, c pluginCase) {
	base := runtime.NumGoroutine()
	up := newRecorder(t)
	p := secProfile(t, up.URL(), c.lim)
	tool := c.tool
	if tool.Name == "" {
		tool = plugin()
	}
	input, err := json.Marshal(c.cmd(up.URL()))
	require.NoError(t, err)

	res := rt.Run(context.Background(), tool, p, input)
	up.Close()

	want := c.stat
	if want == "" {
		want = broker.StatusOK
	}
	require.Equal(t, want, res.Audit.Status, "error: %v\nlog:\n%s", res.Err, res.Log)
	if len(c.err) == 0 && c.check == nil {
		require.NoError(t, res.Err, "log:\n%s", res.Log)
	}
	for _, part := range c.err {
		require.Error(t, res.Err)
		require.Contains(t, res.Err.Error(), part)
	}
	if res.Err != nil {
		require.Equal(t, res.Err.Error(), res.Audit.Error)
	}
	if c.want != "" {
		requireWant(t, c.want, guestView(res.Output, true))
	}
	require.Equal(t, c.calls, res.Audit.Counters)
	require.Equal(t, tool.Name, res.Audit.Tool)
	requireAuditAndTrace(t, res)

	reqs := up.requests()
	require.Len(t, reqs, c.calls.Forwarded+c.calls.Failed, "requests that reached the upstream")
	if len(reqs) == 0 {
		require.Zero(t, up.dials.Load(), "connections to the upstream")
	}
	for _, r := range reqs {
		require.Equal(t, []string{secCredValue}, r.Header.Values(secCredHeader))
	}
	requireNoCredential(t, res)
	if c.check != nil {
		c.check(t, res)
	}
	requireGoroutinesBack(t, base)
}
