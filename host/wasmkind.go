package host

import (
	"context"
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

func newWasmKind(rt *Runtime) *wasmKind {
	return &wasmKind{rt: rt, limits: rt.opts.ModuleLimits.withDefaults(), compiles: make(chan struct{}, runtime.NumCPU()),
		modules: newModuleCache(maxCachedModules, maxCachedModuleBytes)}
}

func (k *wasmKind) load(ctx context.Context, tool Tool, _ *profiles.Profile, limits profiles.Limits, input []byte) (*guest, []byte, error) {
	if len(tool.wasm) == 0 {
		return nil, nil, setupError("load the tool", &ModuleError{Reason: "the module is empty"})
	}
	key := tool.contentHash()
	if g := k.modules.lookup(key); g != nil { // checked against the same limits when compiled
		if err := checkFits(g.shape, limits.Memory); err != nil {
			g.release()
			return nil, nil, err
		}
		return g, input, nil
	}
	shape, err := checkModule(tool.wasm, k.limits)
	if isMalformed(err) {
		// wazero reads the sections in the same order and says precisely what is wrong. Should
		// it read what checkModule could not, the module stays refused, unchecked.
		if g, cerr := k.rt.compile(ctx, tool.wasm); cerr != nil {
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
	g, err := k.modules.get(ctx, key, len(tool.wasm), func() (*guest, error) { return k.compile(tool.wasm, shape) })
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
