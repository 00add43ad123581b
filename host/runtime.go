package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/hostfuncs"
)

// Options configure a Runtime. The zero value is usable.
type Options struct {
	// CacheDir holds wazero's compilation cache. "" means $PLIMSOLL_CACHE_DIR (read through
	// Getenv), else os.UserCacheDir()/plimsoll/wazero; when neither is available, compiled code
	// is kept in memory only.
	CacheDir string
	// CacheMaxBytes bounds the compilation cache on disk; the least recently used entries are
	// removed past it. 0 means DefaultCacheMaxBytes.
	CacheMaxBytes int64
	// Transport carries forwarded calls and probes upstream. nil means the broker's default.
	Transport http.RoundTripper
	// Now is the broker's clock (trace times, duration_ms). nil means time.Now. Guests always see
	// the real clock.
	Now func() time.Time
	// Getenv reads the environment: credentials named by env, and $PLIMSOLL_CACHE_DIR. nil means
	// os.Getenv.
	Getenv func(string) string
	// PoolSize is the number of pre-initialised JavaScript instances kept ready. Each serves one
	// run and is then closed; a background goroutine refills the pool. 0 means none.
	PoolSize int
	// MaxConcurrent is the number of runs executing at once. Further runs wait for a slot or for
	// their context. 0 means 2×GOMAXPROCS.
	MaxConcurrent int
	// ModuleLimits bound what a .wasm tool or Extism plugin may declare; a zero field means
	// DefaultModuleLimits()'s.
	ModuleLimits ModuleLimits
}

// EnvCacheDir names the environment variable that sets the default compilation cache directory.
const EnvCacheDir = "PLIMSOLL_CACHE_DIR"

// Runtime runs tools. It compiles each kind of guest once and creates a fresh module instance
// for every run. It is safe for concurrent use.
type Runtime struct {
	r       wazero.Runtime   // for wasm tools: wazero's close-on-context-done stops them
	engines []wazero.Runtime // r and every kind's own (the JS engine stops itself); all closed together
	cache   wazero.CompilationCache
	dir     string // the compilation cache's directory; "" for memory only
	getenv  func(string) string
	opts    Options
	slots   chan struct{}
	kinds   map[string]guestKind
	limits  *broker.Limits // the per-API concurrency limits its runs share (limits.go)

	executing atomic.Int64  // runs inside execute
	idle      chan struct{} // a token when executing drops to 0

	mu        sync.Mutex // guards closed against running.Add
	closed    atomic.Bool
	closing   context.Context // done once Close starts: it ends every run's context
	closeRuns context.CancelFunc
	running   sync.WaitGroup
}

// guest is a compiled module and how to run it.
type guest struct {
	r        wazero.Runtime // the runtime mod was compiled in
	mod      wazero.CompiledModule
	entry    entry
	minBytes int64       // the memory the module declares it needs at start
	snap     *snapshot   // the state after _initialize, or a .wasm tool's before it (snapshot.go); nil for none
	shape    moduleShape // a checked .wasm tool's counts (wasmcheck.go), without its module
	release  func()      // called when a run is done with the guest; nil for nothing
}

// New builds a Runtime. Close it to release compiled code and pooled instances.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	dir := resolveCacheDir(opts.CacheDir, getenv)
	pruneCache(dir, cacheBudget(opts.CacheMaxBytes))
	cache, err := newCache(dir)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{cache: cache, dir: dir, opts: opts, getenv: getenv, idle: make(chan struct{}, 1), limits: broker.NewLimits()}
	rt.closing, rt.closeRuns = context.WithCancel(context.Background())
	n := opts.MaxConcurrent
	if n <= 0 {
		n = 2 * runtime.GOMAXPROCS(0)
	}
	rt.slots = make(chan struct{}, n)
	rt.r, err = rt.newEngine(ctx, true)
	rt.kinds = make(map[string]guestKind, len(registered))
	for _, e := range registered {
		if err != nil {
			break
		}
		rt.kinds[e.name], err = e.start(ctx, rt)
	}
	if err != nil {
		for _, r := range rt.engines {
			r.Close(ctx)
		}
		return nil, err
	}
	for _, k := range rt.kinds {
		if p, ok := k.(pooler); ok && rt.opts.PoolSize > 0 {
			p.startPool(rt.opts.PoolSize)
		}
	}
	return rt, nil
}

// newEngine makes a wazero runtime with the WASI and plimsoll host modules, sharing the
// compilation cache. closeOnDone makes wazero stop a guest when its call's context ends (checks
// in compiled loops and calls, which cost a guest several times its run time); without it the
// guest must stop itself. NewRuntimeConfig picks the compiler engine where wazero supports it
// (amd64, arm64): the interpreter compiles faster but runs guests 5–10× slower.
func (rt *Runtime) newEngine(ctx context.Context, closeOnDone bool) (wazero.Runtime, error) {
	cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(closeOnDone).WithCompilationCache(rt.cache)
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		r.Close(ctx)
		return nil, fmt.Errorf("host: define WASI: %w", err)
	}
	if err := hostfuncs.Instantiate(ctx, r); err != nil {
		r.Close(ctx)
		return nil, fmt.Errorf("host: %w", err)
	}
	rt.engines = append(rt.engines, r)
	return r, nil
}

// resolveCacheDir picks the compilation cache directory: the option, else $PLIMSOLL_CACHE_DIR,
// else the user cache dir; "" when none is available.
func resolveCacheDir(dir string, getenv func(string) string) string {
	if dir == "" {
		dir = getenv(EnvCacheDir)
	}
	if dir == "" {
		if base, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(base, "plimsoll", "wazero")
		}
	}
	return dir
}

func newCache(dir string) (wazero.CompilationCache, error) {
	if dir == "" {
		return wazero.NewCompilationCache(), nil
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, fmt.Errorf("host: compilation cache %s: %w", dir, err)
	}
	return cache, nil
}

// Close stops the pool, stops runs still executing (they end with ErrClosed) and waits for
// them until ctx is done, then releases compiled code.
func (rt *Runtime) Close(ctx context.Context) error {
	rt.mu.Lock()
	already := rt.closed.Swap(true)
	rt.mu.Unlock()
	if already {
		return nil
	}
	rt.closeRuns()
	for _, k := range rt.kinds {
		k.stop(ctx)
	}
	// Closing wasm tools' runtime closes its instances: they stop at their next check. The JS
	// engine stops itself at its next clock check (its clock jumps once rt.closed is set), and its
	// runtime is closed only once its runs have returned, so nothing is freed under a guest that
	// is still running.
	err := rt.r.Close(ctx)
	done := make(chan struct{})
	go func() { rt.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		err = errors.Join(err, fmt.Errorf("host: runs still executing: %w", ctx.Err()))
	}
	for _, r := range rt.engines {
		if r != rt.r {
			err = errors.Join(err, r.Close(ctx))
		}
	}
	if ctx.Err() != nil {
		return err
	}
	for _, k := range rt.kinds {
		k.release()
	}
	return errors.Join(err, rt.cache.Close(ctx))
}

// compile compiles a guest module for wasm tools' runtime and checks that plimsoll can run it.
func (rt *Runtime) compile(ctx context.Context, bin []byte) (*guest, error) {
	return rt.compileIn(ctx, rt.r, bin)
}

// compileIn compiles a guest module in r.
func (rt *Runtime) compileIn(ctx context.Context, r wazero.Runtime, bin []byte) (*guest, error) {
	ctx = experimental.WithCompilationWorkers(ctx, runtime.NumCPU())
	m, err := r.CompileModule(ctx, bin)
	if err != nil {
		return nil, setupError("compile the module", err)
	}
	if err := hostfuncs.CheckImports(m); err != nil {
		m.Close(ctx)
		return nil, setupError("check the module's imports", err)
	}
	e, err := entryOf(m)
	if err != nil {
		m.Close(ctx)
		return nil, setupError("find the module's entry point", err)
	}
	pages, _ := declaredMinPages(bin)
	return &guest{r: r, mod: m, entry: e, minBytes: int64(pages) * wasmPage}, nil
}

// newInstance instantiates g with memory capped at memLimit bytes, restored to the state after
// _initialize when g has a snapshot.
func (rt *Runtime) newInstance(ctx context.Context, g *guest, memLimit uint64) (*instance, error) {
	inst, err := instantiate(ctx, g.r, g.mod, memLimit, g.snap)
	if err != nil {
		return nil, err
	}
	inst.port.closed = &rt.closed
	if g.snap == nil {
		return inst, nil
	}
	if err := g.snap.restore(inst); err != nil {
		inst.close(context.Background())
		return nil, err
	}
	return inst, nil
}
