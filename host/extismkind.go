package host

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/plimsoll/plimsoll/abi"
	"github.com/plimsoll/plimsoll/hostfuncs"
	"github.com/plimsoll/plimsoll/internal/wasmbin"
	"github.com/plimsoll/plimsoll/profiles"
)

// extismKind runs Extism plugins (any PDK language) on github.com/extism/go-sdk. A plugin's
// structure is checked as a .wasm tool's is (wasmcheck.go), it is compiled once per content hash
// (an extism.CompiledPlugin, with its own wazero runtime sharing the host's compilation cache),
// and each run gets a fresh instance whose kernel and plugin memories share limits.memory.
//
// The broker is the host function plimsoll_call (hostfuncs.ExtismCall), through the run's
// hostfuncs.Session. Extism's own http_request is never allowed a host: go-sdk refuses it
// before sending anything, and the run fails with an ExtismHTTPError naming plimsoll_call.
type extismKind struct {
	rt       *Runtime
	limits   ModuleLimits
	compiles chan struct{}
	modules  *moduleCache
	compiled atomic.Int64 // plugins compiled, for tests and figures

	mu       sync.Mutex
	live     map[*extism.CompiledPlugin]struct{} // every compiled plugin not yet closed, for stop
	calls    sync.WaitGroup                      // plugin calls executing, which stop waits for
	stopping bool                                // set by stop: no call starts after it
}

// ExtismFunction is the export an Extism tool calls when none is named (--function).
const ExtismFunction = "run"

// extismVarBytes caps a plugin's variable store (var_set). A run is one call on a fresh
// instance, so variables only live for the run; go-sdk recounts the whole store on every set.
const extismVarBytes = 64 << 10

// extismLogLevel is the lowest plugin log level kept in the run log. go-sdk's level is global to
// the process; its own debug and trace lines are below it.
var extismLogLevel = sync.OnceFunc(func() { extism.SetLogLevel(extism.LogLevelInfo) })

// KindExtism names Extism plugins (ExtismTool).
const KindExtism = "extism"

// ExtismTool is an Extism plugin built with any PDK: the run calls its export function (""
// means ExtismFunction, "run") with the tool's input as the plugin's input, and the plugin's
// output is the tool's output. Calls go through plimsoll_call (preamble/extism-go).
// The slice is not copied; do not modify it once the tool is built.
func ExtismTool(name string, wasm []byte, function string) Tool {
	return Tool{Name: name, src: plugin{newModule(wasm), function}}
}

// plugin is an Extism plugin and the function its run calls ("" for ExtismFunction).
type plugin struct {
	module
	fn string
}

func (plugin) kind() string { return KindExtism }

func extismFromSource(name string, wasm []byte) Tool { return ExtismTool(name, wasm, "") }

// WithFunction is an Extism tool calling function instead; any other tool is returned as it is.
func (t Tool) WithFunction(function string) Tool {
	if p, ok := t.src.(plugin); ok {
		p.fn = function
		t.src = p
	}
	return t
}

// AsExtism is a module tool run as an Extism plugin calling function ("" means ExtismFunction),
// whatever it imports; any other tool is returned as it is.
func (t Tool) AsExtism(function string) Tool {
	switch m := t.src.(type) {
	case module:
		t.src = plugin{m, function}
	case plugin:
		m.fn = function
		t.src = m
	}
	return t
}

func newExtismKind(_ context.Context, rt *Runtime) (guestKind, error) {
	extismLogLevel()
	return &extismKind{rt: rt, limits: rt.opts.ModuleLimits.withDefaults(), compiles: make(chan struct{}, runtime.NumCPU()),
		modules: newModuleCache(maxCachedModules, maxCachedModuleBytes), live: map[*extism.CompiledPlugin]struct{}{}}, nil
}

// ExtismHTTPError is a plugin that called Extism's http_request. plimsoll allows it no host, so
// nothing was sent; calls go through plimsoll_call (preamble/extism-go).
type ExtismHTTPError struct {
	URL string // what the plugin asked for, when go-sdk said
}

func (e *ExtismHTTPError) Error() string {
	to := ""
	if e.URL != "" {
		to = " to " + e.URL
	}
	return fmt.Sprintf("tool failed: the plugin called Extism's http_request%s, which plimsoll does not serve: "+
		"nothing was sent; make calls through %s.%s (preamble/extism-go)", to, hostfuncs.ExtismModule, hostfuncs.ExtismCall)
}

// PluginImportError is a plugin importing something plimsoll does not provide to plugins.
type PluginImportError struct {
	Module, Name string
}

func (e *PluginImportError) Error() string {
	msg := fmt.Sprintf("the plugin imports %s.%s, which plimsoll does not provide to Extism plugins "+
		"(allowed: %s, extism:host/env, %s.%s)", e.Module, e.Name, abi.WASIModule, hostfuncs.ExtismModule, hostfuncs.ExtismCall)
	if e.Module == abi.Module {
		msg += "; a plugin built on preamble/extism-go must be built with -tags plimsoll_extism"
	}
	return msg
}

// isExtismPlugin reports whether bin imports from Extism's host modules.
func isExtismPlugin(bin []byte) bool {
	m, _ := wasmbin.Read(bin)
	if m == nil {
		return false
	}
	s, ok := m.Section(wasmbin.SectionImport)
	if !ok {
		return false
	}
	imps, _ := s.Imports()
	for _, im := range imps {
		if im.Module == extismEnv || im.Module == hostfuncs.ExtismModule {
			return true
		}
	}
	return false
}

const extismEnv = "extism:host/env"

// checkPluginImports refuses imports go-sdk would not resolve, naming them.
func checkPluginImports(m *wasmbin.Module) error {
	s, ok := m.Section(wasmbin.SectionImport)
	if !ok {
		return nil
	}
	imports, err := s.Imports()
	if err != nil {
		return err
	}
	for _, im := range imports {
		switch {
		case im.Module == abi.WASIModule, im.Module == extismEnv:
		case im.Module == hostfuncs.ExtismModule && im.Name == hostfuncs.ExtismCall:
		default:
			return &PluginImportError{Module: im.Module, Name: im.Name}
		}
	}
	return nil
}

func (k *extismKind) load(ctx context.Context, tool Tool, _ *profiles.Profile, limits profiles.Limits, input []byte) (*guest, []byte, error) {
	p := tool.src.(plugin)
	if len(p.wasm) == 0 {
		return nil, nil, setupError("load the plugin", &ModuleError{Reason: "the module is empty"})
	}
	shape, err := checkModule(p.wasm, k.limits)
	if err != nil {
		return nil, nil, err
	}
	if err := checkPluginImports(shape.mod); err != nil {
		return nil, nil, setupError("check the plugin's imports", err)
	}
	if err := checkFits(shape, limits.Memory); err != nil {
		return nil, nil, err
	}
	g, err := k.modules.get(ctx, p.sum, len(p.wasm), func() (*guest, error) { return k.compile(p.wasm, shape) })
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, contextError(ctx)
		}
		return nil, nil, err
	}
	fn := p.fn
	if fn == "" {
		fn = ExtismFunction
	}
	g.mod = pluginRun{g.mod.(*compiledPlugin), fn} // g is this run's copy
	return g, input, nil
}

// compiledPlugin lets the module cache keep a compiled plugin: the cache only closes it.
type compiledPlugin struct {
	wazero.CompiledModule // nil: a plugin is instantiated through go-sdk, never directly
	p                     *extism.CompiledPlugin
	k                     *extismKind
}

func (c *compiledPlugin) Close(ctx context.Context) error {
	c.k.mu.Lock()
	delete(c.k.live, c.p)
	c.k.mu.Unlock()
	return c.p.Close(ctx)
}

// pluginRun is a compiled plugin and the function one run calls.
type pluginRun struct {
	*compiledPlugin
	fn string
}

// compile compiles a checked plugin, one of at most NumCPU at once, into its own go-sdk runtime
// configured as the host's: compiler engine, shared compilation cache, close on context done.
func (k *extismKind) compile(bin []byte, shape moduleShape) (*guest, error) {
	k.compiles <- struct{}{}
	defer func() { <-k.compiles }()
	k.compiled.Add(1)
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithCompilationCache(k.rt.cache)
	// Merging the Go linker's many small data segments makes each instantiation ~1 ms cheaper.
	manifest := extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: coalesceData(boundTables(bin, shape))}}}
	call := extism.NewHostFunctionWithStack(hostfuncs.ExtismCall, plimsollCall,
		[]extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
	cp, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{RuntimeConfig: cfg, EnableWasi: true},
		[]extism.HostFunction{call})
	if err != nil {
		return nil, setupError("compile the plugin", err)
	}
	k.mu.Lock()
	k.live[cp] = struct{}{}
	k.mu.Unlock()
	return &guest{mod: &compiledPlugin{p: cp, k: k}, minBytes: int64(shape.minPages) * wasmPage}, nil
}

// kernelFuncs are the Extism kernel's length and alloc of one instance, looked up once: go-sdk
// looks an export up on every kernel call, a few µs each.
type kernelFuncs struct{ length, alloc api.Function }

type kernelKey struct{}

// kernel returns the instance's kernel functions, from the run's cache when it has one.
func kernel(ctx context.Context) *kernelFuncs {
	k, _ := ctx.Value(kernelKey{}).(*kernelFuncs)
	if k == nil {
		k = &kernelFuncs{}
	}
	if k.length == nil {
		if mod, ok := ctx.Value(extism.PluginCtxKey("extism")).(api.Module); ok {
			k.length, k.alloc = mod.ExportedFunction("length"), mod.ExportedFunction("alloc")
		}
	}
	return k
}

func call1(ctx context.Context, f api.Function, arg uint64) (uint64, error) {
	if f == nil {
		return 0, errExtismAlloc
	}
	res, err := f.Call(ctx, arg)
	if err != nil || len(res) != 1 {
		return 0, errors.Join(errExtismAlloc, err)
	}
	return res[0], nil
}

// plimsollCall is plimsoll_call(request block) -> response block.
func plimsollCall(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
	s := hostfuncs.SessionFrom(ctx)
	if s == nil {
		stack[0] = 0
		return
	}
	kf := kernel(ctx)
	mem := p.Memory()
	size := uint64(mem.Size())
	off := stack[0]
	var length uint64
	if off != 0 && off < size {
		length, _ = call1(ctx, kf.length, off)
	}
	resp, err := s.Exchange(ctx, hostfuncs.Block{Offset: off, Length: length, Read: func() ([]byte, bool) {
		view, ok := mem.Read(uint32(off), uint32(length))
		return append([]byte(nil), view...), ok
	}}, size)
	if err != nil {
		panic(sys.NewExitError(hostfuncs.LimitExitCode)) // the host reads the reason from the session
	}
	out, err := call1(ctx, kf.alloc, uint64(len(resp)))
	if err != nil || out == 0 || !mem.Write(uint32(out), resp) {
		panic(errExtismAlloc)
	}
	stack[0] = out
}

var errExtismAlloc = errors.New("plimsoll_call: no room for the response envelope in the plugin's memory")

func (k *extismKind) pooled(*guest, uint64) *instance { return nil }

func (k *extismKind) ended(*runState, int32, error) (error, bool) { return nil, false }

// stop closes every compiled plugin's runtime once the calls still executing have returned:
// Close has cancelled their runs, and a plugin's runtime closes it when its context ends, so
// they return at their next check. Closing a runtime under a call races inside wazero; only if
// ctx ends first are the plugins closed under their calls, to stop them whatever it costs.
func (k *extismKind) stop(ctx context.Context) {
	k.mu.Lock()
	k.stopping = true
	k.mu.Unlock()
	called := make(chan struct{})
	go func() { k.calls.Wait(); close(called) }()
	select {
	case <-called:
	case <-ctx.Done():
	}
	k.mu.Lock()
	live := make([]*extism.CompiledPlugin, 0, len(k.live))
	for cp := range k.live {
		live = append(live, cp)
	}
	k.mu.Unlock()
	for _, cp := range live {
		_ = cp.Close(ctx)
	}
}

func (k *extismKind) release() { k.modules.closeAll() }

// call runs one plugin call on a fresh instance: the tool's input is the plugin's input and its
// output the tool's output. The plugin's logs and its WASI stdout and stderr go to the run log.
// beginCall counts a call in, unless stop has begun (then the runtime is closing).
func (k *extismKind) beginCall() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopping {
		return false
	}
	k.calls.Add(1)
	return true
}

func (k *extismKind) call(st *runState, input []byte) (int32, error) {
	if !k.beginCall() {
		return 0, ErrClosed
	}
	defer k.calls.Done()
	run := st.guest.mod.(pluginRun)
	cp := run.p
	budget := &memory{limit: uint64(st.limits.Memory)}
	st.inst = &instance{mem: budget, mod: closedModule{}}
	callCtx := context.WithValue(hostfuncs.WithSession(st.ctx, st.session), kernelKey{}, &kernelFuncs{})
	port := &ports{ctx: st.ctx, stderr: st.stderr}
	cfg := wazero.NewModuleConfig().
		WithStdout(stderrPort{port}).
		WithStderr(stderrPort{port}).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(port.sleep).
		WithRandSource(rand.Reader)
	plugin, err := cp.Instance(experimental.WithMemoryAllocator(callCtx, budget), extism.PluginInstanceConfig{ModuleConfig: cfg})
	if err == nil && budget.refused != 0 {
		plugin.Close(context.Background())
		err = memoryLimit(budget.limit)
	}
	if err != nil {
		budget.release()
		return 0, k.rt.startError(st.ctx, err)
	}
	st.inst.mod = pluginModule{plugin: plugin, budget: budget}
	if !plugin.FunctionExists(run.fn) {
		return 0, &startFailure{err: setupError("find the plugin's function",
			fmt.Errorf("the plugin exports no function %q (name another with --function)", run.fn))}
	}
	plugin.MaxVarBytes = extismVarBytes
	plugin.AllowedHosts = nil // never: go-sdk's http_request would follow redirects to any host
	plugin.Config = map[string]string{}
	plugin.SetLogger(func(level extism.LogLevel, msg string) {
		fmt.Fprintf(st.stderr, "%s: %s\n", strings.ToLower(level.String()), msg)
	})

	rc, out, err := plugin.CallWithContext(callCtx, run.fn, input)
	if err != nil {
		if msg := plugin.GetErrorWithContext(context.Background()); msg != "" && msg == err.Error() {
			fmt.Fprintln(st.stderr, msg) // the plugin's own error (pdk.SetError): the run's reason
			if rc == 0 {
				rc = uint32(abi.ExitFailed)
			}
			return int32(rc), nil
		}
		return 0, pluginTrap(err)
	}
	st.stdout.Write(out) // over limits.max_output_bytes, it records the limit
	return int32(rc), nil
}

// pluginTrap says what a trap inside go-sdk's host functions meant, or returns it as it is.
func pluginTrap(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, extismEnv+".http_request"):
		url := ""
		if _, rest, ok := strings.Cut(msg, "HTTP request to '"); ok {
			url, _, _ = strings.Cut(rest, "'")
		}
		return &startFailure{err: &ExtismHTTPError{URL: url}}
	case strings.Contains(msg, "Variable store is full"):
		return &startFailure{err: &LimitError{Limit: "extism.var_bytes", Message: fmt.Sprintf(
			"plugin variable store limit (%s) reached: var_set refused", profiles.FormatSize(extismVarBytes))}}
	case errors.Is(err, errExtismAlloc):
		return err
	}
	return err
}

// pluginModule stands for a plugin instance where the host closes an instance.
type pluginModule struct {
	closedModule
	plugin *extism.Plugin
	budget *memory
}

func (m pluginModule) Close(ctx context.Context) error {
	err := m.plugin.Close(ctx)
	m.budget.release()
	return err
}

// closedModule is the api.Module of an instance that has none of its own (nil: only Close is
// ever called on it).
type closedModule struct{ api.Module }

func (closedModule) Close(context.Context) error { return nil }
