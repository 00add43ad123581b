package host

import (
	"context"
	"crypto/sha256"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/plimsoll/plimsoll/profiles"
)

// wasmKind runs a tool's own wasip1 module. Its structure is checked before compiling
// (wasmcheck.go), compiling is bounded by the run's deadline, and compiled modules are kept by
// content hash, so the second run of a tool starts as fast as a JS run.
type wasmKind struct {
	rt       *Runtime
	limits   ModuleLimits
	compiles chan struct{} // bounds compilations at once: each is CPU- and memory-heavy
	modules  *moduleCache
	compiled atomic.Int64 // modules compiled, for tests and figures
}

// KindWasm names tools that are wasip1 modules of their own (WasmTool).
const KindWasm = "wasm"

// WasmTool is a guest module built for wasip1: a reactor (_initialize and run() -> i32) or a
// command (_start). The slice is not copied; do not modify it once the tool is built.
// A module that imports Extism's host modules is an Extism plugin: it runs as ExtismTool(name,
// wasm, "") does.
func WasmTool(name string, wasm []byte) Tool {
	if isExtismPlugin(wasm) {
		return ExtismTool(name, wasm, "")
	}
	return Tool{Name: name, src: newModule(wasm)}
}

// module is a module tool's bytes and their content hash, taken once when the tool is built, not
// per run: a Go tool is MBs (a quarter of its run start).
type module struct {
	wasm []byte
	sum  [32]byte
}

func newModule(wasm []byte) module { return module{wasm: wasm, sum: sha256.Sum256(wasm)} }

func (module) kind() string { return KindWasm }

func newWasmKind(_ context.Context, rt *Runtime) (guestKind, error) {
	return &wasmKind{rt: rt, limits: rt.opts.ModuleLimits.withDefaults(), compiles: make(chan struct{}, runtime.NumCPU()),
		modules: newModuleCache(maxCachedModules, maxCachedModuleBytes)}, nil
}

func (k *wasmKind) load(ctx context.Context, tool Tool, _ *profiles.Profile, limits profiles.Limits, input []byte) (*guest, []byte, error) {
	m := tool.src.(module)
	if len(m.wasm) == 0 {
		return nil, nil, setupError("load the tool", &ModuleError{Reason: "the module is empty"})
	}
	if g := k.modules.lookup(m.sum); g != nil { // checked against the same limits when compiled
		if err := checkFits(g.shape, limits.Memory); err != nil {
			g.release()
			return nil, nil, err
		}
		return g, input, nil
	}
	shape, err := checkModule(m.wasm, k.limits)
	if isMalformed(err) {
		// wazero reads the sections in the same order and says precisely what is wrong. Should
		// it read what checkModule could not, the module stays refused, unchecked.
		if g, cerr := k.rt.compile(ctx, m.wasm); cerr != nil {
			err = cerr
		} else {
			g.mod.Close(ctx)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if err := checkFits(shape, limits.Memory); err != nil {
		return nil, nil, err
	}
	g, err := k.modules.get(ctx, m.sum, len(m.wasm), func() (*guest, error) { return k.compile(m.wasm, shape) })
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, contextError(ctx)
		}
		return nil, nil, err
	}
	return g, input, nil
}

// checkFits refuses a module whose declared memory and tables do not fit under limits.memory.
func checkFits(shape moduleShape, limit int64) error {
	mem := int64(shape.minPages) * wasmPage
	if mem > limit {
		return belowMinimum(limit, mem)
	}
	tables := int64(shape.tableElements) * tableElementBytes
	if mem+tables <= limit {
		return nil
	}
	return &ModuleError{Limit: "limits.memory", Reason: fmt.Sprintf(
		"memory limit limits.memory (%s) is below the %s the module's memory (%s) and tables (%d elements, %s) take",
		profiles.FormatSize(limit), profiles.FormatSize(mem+tables), profiles.FormatSize(mem), shape.tableElements, profiles.FormatSize(tables))}
}

// compile compiles a checked module, one of at most NumCPU at once. It is not bound to one run:
// a run whose deadline passes stops waiting, and the module is cached for the next.
func (k *wasmKind) compile(bin []byte, shape moduleShape) (*guest, error) {
	k.compiles <- struct{}{}
	defer func() { <-k.compiles }()
	k.compiled.Add(1)
	bin = boundTables(bin, shape)
	mod, snap, ok := prepareData(bin)
	if !ok {
		mod = coalesceData(bin)
	}
	g, err := k.rt.compile(context.Background(), mod)
	if err != nil {
		snap.close()
		return nil, err
	}
	g.snap, g.shape = snap, moduleShape{tableElements: shape.tableElements, minPages: shape.minPages}
	return g, nil
}

func (k *wasmKind) pooled(*guest, uint64) *instance { return nil }

func (k *wasmKind) ended(*runState, int32, error) (error, bool) { return nil, false }

func (k *wasmKind) stop(context.Context) {}

func (k *wasmKind) release() { k.modules.closeAll() }
