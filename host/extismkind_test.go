package host

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/guests/testplugin"
	"github.com/plimsoll/plimsoll/hostfuncs"
	"github.com/plimsoll/plimsoll/profiles"
)

func (rt *Runtime) extismPlugins() *extismKind { return rt.kinds[KindExtism].(*extismKind) }

func testPlugin(fn string) Tool { return ExtismTool("testplugin.wasm", testplugin.Wasm(), fn) }

// A plugin is recognised by its imports, compiled once by content hash, and each run gets a
// fresh instance.
func TestExtismPluginsAreCompiledOnce(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	rt := newRuntime(t, Options{})
	tool := WasmTool("testplugin.wasm", testplugin.Wasm())
	require.Equal(t, KindExtism, tool.Kind())
	require.Equal(t, KindWasm, goGuest().Kind())
	for range 3 {
		res := rt.Run(context.Background(), tool, p, []byte(`{"op":"grow","mib":1}`))
		require.NoError(t, res.Err, "log:\n%s", res.Log)
		assert.Equal(t, "held 1 MiB", string(res.Output), "each run starts with nothing held")
	}
	assert.Equal(t, int64(1), rt.extismPlugins().compiled.Load())
}

// Closing the runtime stops a plugin still running: it ends with ErrClosed and its audit line.
func TestExtismRunEndsWhenTheRuntimeCloses(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "limits:\n  run_timeout: 60s\n")
	rt, err := New(context.Background(), Options{CacheDir: testCacheDir(), Getenv: testGetenv})
	require.NoError(t, err)
	require.NoError(t, rt.Run(context.Background(), testPlugin("noop"), p, nil).Err) // compiled
	done := make(chan Result)
	go func() { done <- rt.Run(context.Background(), testPlugin(""), p, []byte(`{"op":"spin"}`)) }()
	for rt.executing.Load() == 0 {
		runtime.Gosched()
	}
	require.NoError(t, rt.Close(context.Background()))
	res := <-done
	require.ErrorIs(t, res.Err, ErrClosed)
	assert.Equal(t, res.Err.Error(), res.Audit.Error)
}

// BenchmarkExtismRunStart is a whole run of a trivial plugin (the Go PDK test plugin's noop),
// compiled once: a fresh instance of Extism's kernel and the plugin, the Go runtime's
// _initialize, the call, the audit line.
func BenchmarkExtismRunStart(b *testing.B) {
	ps := newPetstore(b)
	p := profile(b, ps.URL, "")
	rt := newRuntime(b, Options{})
	tool := testPlugin("noop")
	require.NoError(b, rt.Run(context.Background(), tool, p, nil).Err) // compile outside the timing
	b.ResetTimer()
	reportMedian(b, nil, func() {
		if res := rt.Run(context.Background(), tool, p, nil); res.Err != nil {
			b.Fatal(res.Err)
		}
	})
}

// BenchmarkExtismCall is one plimsoll_call round trip from the Go PDK test plugin, answered by
// a fixed broker reply: the plugin allocates the envelope in Extism memory, the host reads it
// and allocates the answer, the plugin reads and frees it. b.N calls run in one plugin call.
func BenchmarkExtismCall(b *testing.B) {
	answer := []byte(`{"status":403,"headers":{},"body":""}`)
	rt := newRuntime(b, Options{})
	k := rt.extismPlugins()
	tool := testPlugin("")
	g, _, err := k.load(context.Background(), tool, nil, profiles.DefaultLimits, nil)
	require.NoError(b, err)
	defer g.release()
	cp := g.mod.(pluginRun).p
	limits := profiles.DefaultLimits
	limits.MaxHostCalls = b.N + 1
	ctx := context.WithValue(hostfuncs.WithSession(context.Background(), hostfuncs.NewSession(fixedBroker{answer}, limits)),
		kernelKey{}, &kernelFuncs{})
	plugin, err := cp.Instance(ctx, extism.PluginInstanceConfig{})
	require.NoError(b, err)
	defer plugin.Close(ctx)
	_, _, err = plugin.CallWithContext(ctx, "noop", nil) // the Go runtime's _initialize, outside the timing
	require.NoError(b, err)
	cmd := []byte(`{"op":"calls","envelope":"{\"method\":\"GET\",\"path\":\"/admin\"}","n":` + strconv.Itoa(b.N) + `}`)

	b.ResetTimer()
	rc, out, err := plugin.CallWithContext(ctx, "run", cmd)
	b.StopTimer()
	require.NoError(b, err)
	require.Zero(b, rc)
	require.Equal(b, string(answer), string(out))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
}
