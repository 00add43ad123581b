package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/plimsoll/plimsoll/broker"
	jsguest "github.com/plimsoll/plimsoll/guests/quickjs"
	"github.com/plimsoll/plimsoll/hostfuncs"
	"github.com/plimsoll/plimsoll/profiles"
)

// Options configure a Runtime. The zero value is usable.
type Options struct {
	// CacheDir holds wazero's compilation cache. "" means $PLIMSOLL_CACHE_DIR, else
	// os.UserCacheDir()/plimsoll/wazero; when neither is available, compiled code is kept in
	// memory only.
	CacheDir string
	// Transport carries forwarded calls and probes upstream. nil means the broker's default.
	Transport http.RoundTripper
	// Now is the broker's clock (trace times, duration_ms). nil means time.Now. Guests always see
	// the real clock.
	Now func() time.Time
	// Getenv resolves credentials named by env. nil means os.Getenv.
	Getenv func(string) string
	// PoolSize is the number of pre-initialised JavaScript instances kept ready. Each serves one
	// run and is then closed; a background goroutine refills the pool. 0 means none.
	PoolSize int
	// MaxConcurrent is the number of runs executing at once. Further runs wait for a slot or for
	// their context. 0 means 2×GOMAXPROCS.
	MaxConcurrent int
}

// The ways a runaway JS tool is stopped. engineDeadline: the host passes the run's deadline on
// stdin, and the engine checks the clock in its interrupt handler (bytecode, regex) and from
// every loop of its compiled code (guests/internal/wasmbuild/looptick.go); the clock jumps past
// the deadline when the run is canceled or the runtime closes (ports.walltime).
// closeOnContextDone: wazero closes the module when the run's context ends; it costs the engine
// 4–7× its run time (BENCHMARKS.md), so the JS engine's runtime goes without it. Wasm tools
// always have it. Tests flip these to measure each alone.
var (
	closeOnContextDone = false
	engineDeadline     = true
)

// EnvCacheDir names the environment variable that sets the default compilation cache directory.
const EnvCacheDir = "PLIMSOLL_CACHE_DIR"

// Runtime runs tools. It compiles the JavaScript runtime once and creates a fresh module instance
// for every run. It is safe for concurrent use.
type Runtime struct {
	r      wazero.Runtime // wasm tools: close-on-context-done stops them
	rJS    wazero.Runtime // the JS engine, which stops itself (see closeOnContextDone)
	cache  wazero.CompilationCache
	getenv func(string) string
	opts   Options
	slots  chan struct{}

	jsGuest   func() (*guest, error) // compiled once, on first use
	snap      *snapshot              // the JS runtime's, once compiled; guarded by jsGuest's once
	moduleDir string                 // where the decompressed JS runtime is kept; "" for nowhere

	pool     chan *instance // pre-initialised JS instances; nil when PoolSize is 0
	stopFill context.CancelFunc
	fillDone chan struct{}

	executing atomic.Int64  // runs inside execute
	idle      chan struct{} // a token when executing drops to 0; nil when PoolSize is 0

	mu      sync.Mutex // guards closed against running.Add
	closed  atomic.Bool
	running sync.WaitGroup
}

// guest is a compiled module and how to run it.
type guest struct {
	r        wazero.Runtime // the runtime mod was compiled in
	mod      wazero.CompiledModule
	entry    entry
	minBytes int64     // the memory the module declares it needs at start
	snap     *snapshot // the state after _initialize, for the JS runtime; nil to run it
}

// New builds a Runtime. Close it to release compiled code and pooled instances.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	cacheDir := resolveCacheDir(opts.CacheDir)
	cache, err := newCache(cacheDir)
	if err != nil {
		return nil, err
	}
	// NewRuntimeConfig picks the compiler engine where wazero supports it (amd64, arm64): the
	// interpreter compiles faster but runs guests 5–10× slower.
	newWazero := func(closeOnDone bool) (wazero.Runtime, error) {
		cfg := wazero.NewRuntimeConfig().
			WithCloseOnContextDone(closeOnDone). // the only way to stop a guest that never calls out
			WithCompilationCache(cache)
		r := wazero.NewRuntimeWithConfig(ctx, cfg)
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
			r.Close(ctx)
			return nil, fmt.Errorf("host: define WASI: %w", err)
		}
		if err := hostfuncs.Instantiate(ctx, r); err != nil {
			r.Close(ctx)
			return nil, fmt.Errorf("host: %w", err)
		}
		return r, nil
	}
	r, err := newWazero(true)
	if err != nil {
		return nil, err
	}
	rJS, err := newWazero(closeOnContextDone)
	if err != nil {
		r.Close(ctx)
		return nil, err
	}

	rt := &Runtime{r: r, rJS: rJS, cache: cache, opts: opts, getenv: opts.Getenv, moduleDir: cacheDir}
	if rt.getenv == nil {
		rt.getenv = os.Getenv
	}
	n := opts.MaxConcurrent
	if n <= 0 {
		n = 2 * runtime.GOMAXPROCS(0)
	}
	rt.slots = make(chan struct{}, n)
	rt.jsGuest = sync.OnceValues(func() (*guest, error) {
		bin, fromCopy := jsModule(rt.moduleDir)
		g, err := rt.compileJS(bin)
		if err != nil && fromCopy { // a damaged copy: start again from the embedded bytes
			os.Remove(jsCopyPath(rt.moduleDir))
			g, err = rt.compileJS(jsguest.Wasm())
		}
		if err == nil {
			rt.snap = g.snap // for Close
		}
		return g, err
	})
	if opts.PoolSize > 0 {
		rt.pool = make(chan *instance, opts.PoolSize)
		rt.idle = make(chan struct{}, 1)
		fillCtx, stop := context.WithCancel(context.Background())
		rt.stopFill, rt.fillDone = stop, make(chan struct{})
		go rt.fill(fillCtx)
	}
	return rt, nil
}

// resolveCacheDir picks the compilation cache directory: the option, else $PLIMSOLL_CACHE_DIR,
// else the user cache dir; "" when none is available.
func resolveCacheDir(dir string) string {
	if dir == "" {
		dir = os.Getenv(EnvCacheDir)
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
	if rt.stopFill != nil {
		rt.stopFill()
		<-rt.fillDone
		for drained := false; !drained; {
			select {
			case inst := <-rt.pool:
				inst.close(ctx)
			default:
				drained = true
			}
		}
	}
	// Closing closes every instance: wasm tools stop at their next check, the JS engine at its
	// next clock check (its clock jumps once rt.closed is set).
	err := errors.Join(rt.r.Close(ctx), rt.rJS.Close(ctx))
	done := make(chan struct{})
	go func() { rt.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("host: runs still executing: %w", ctx.Err()))
	}
	rt.snap.close()
	return errors.Join(err, rt.cache.Close(ctx))
}

// compile compiles a guest module and checks that plimsoll can run it.
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

// fill keeps the pool full of initialised JS instances until ctx is done. An instance that fails
// to start stops the filling: runs then start fresh instances and report the error themselves.
func (rt *Runtime) fill(ctx context.Context) {
	defer close(rt.fillDone)
	g, err := rt.jsGuest()
	if err != nil {
		return
	}
	for {
		if !rt.yieldToRuns(ctx) {
			return
		}
		inst, err := rt.newInstance(ctx, g, profiles.MaxMemory)
		if err != nil {
			return
		}
		if err := inst.initialize(ctx); err != nil {
			inst.close(context.Background())
			return
		}
		select {
		case rt.pool <- inst:
		case <-ctx.Done():
			inst.close(context.Background())
			return
		}
	}
}

// fillYield bounds how long the pool's filler waits for executing runs to finish.
const fillYield = 10 * time.Millisecond

// yieldToRuns waits, for at most fillYield, until no run is executing, so that preparing the next
// pooled instance does not compete with a run for the CPU (on a small machine that made pooled
// runs about 0.8 ms slower). It returns false when ctx is done.
func (rt *Runtime) yieldToRuns(ctx context.Context) bool {
	select { // a token left from an earlier quiet moment says nothing about now
	case <-rt.idle:
	default:
	}
	deadline := time.Now().Add(fillYield)
	for rt.executing.Load() > 0 {
		wait := time.Until(deadline)
		if wait <= 0 {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-rt.idle:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
	return ctx.Err() == nil
}

// compileJS compiles the JS runtime and takes its snapshot (see snapshot.go). When the snapshot
// cannot be taken, it compiles the module as it is, and every instance runs _initialize, which
// then reports any error.
func (rt *Runtime) compileJS(bin []byte) (*guest, error) {
	ctx := context.Background()
	if mod, data, globals, ok := prepareJS(bin); ok {
		g, err := rt.compileIn(ctx, rt.rJS, mod)
		if err == nil {
			if g.snap, err = takeSnapshot(ctx, rt.rJS, g.mod, data, globals); err == nil {
				return g, nil
			}
			g.mod.Close(ctx)
		}
	}
	return rt.compileIn(ctx, rt.rJS, coalesceData(bin))
}

// newInstance instantiates g with memory capped at memLimit bytes, restored to the state after
// _initialize when g has a snapshot.
func (rt *Runtime) newInstance(ctx context.Context, g *guest, memLimit uint64) (*instance, error) {
	inst, err := instantiate(ctx, g.r, g.mod, memLimit, g.snap)
	if err != nil {
		return inst, err
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

// pooled takes a pre-initialised JS instance that fits under memLimit, or returns nil.
func (rt *Runtime) pooled(memLimit uint64) *instance {
	select {
	case inst := <-rt.pool:
		if uint64(inst.mod.Memory().Size()) <= memLimit {
			return inst
		}
		// Already bigger than this profile allows: keep it for another run.
		select {
		case rt.pool <- inst:
		default:
			inst.close(context.Background())
		}
	default:
	}
	return nil
}

// Run runs tool under profile p with input on the guest's stdin (for a JS tool, input is JSON
// and empty means null). It returns when the guest is done, and always with exactly one audit.
func (rt *Runtime) Run(ctx context.Context, tool Tool, p *profiles.Profile, input []byte) Result {
	runID := broker.NewRunID()
	if p == nil {
		return unbrokered(runID, tool, setupError("load the profile", errors.New("no profile given")))
	}
	if !rt.enter() {
		return rt.refused(runID, tool, p, ErrClosed)
	}
	defer rt.running.Done()

	select {
	case rt.slots <- struct{}{}:
		defer func() { <-rt.slots }()
	case <-ctx.Done():
		return rt.refused(runID, tool, p, contextError(ctx))
	}

	secret, secretErr := p.ResolveSecret(rt.getenv)
	b, err := rt.newBroker(runID, tool, p, secret)
	if err != nil {
		res := unbrokered(runID, tool, setupError("start the broker", err))
		res.Audit.Profile = p.Name
		return res
	}
	var res Result
	if secretErr != nil {
		err = setupError("resolve the credential", secretErr)
	} else {
		rt.executing.Add(1)
		res.Output, res.Log, err = rt.execute(ctx, b, tool, p, input)
		if rt.executing.Add(-1) == 0 {
			select {
			case rt.idle <- struct{}{}:
			default:
			}
		}
	}
	res.Err = err
	res.Trace = b.Trace()
	res.Audit = b.Finish(statusOf(err), err)
	return res
}

// enter registers a run unless the runtime is closed.
func (rt *Runtime) enter() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed.Load() {
		return false
	}
	rt.running.Add(1)
	return true
}

func (rt *Runtime) newBroker(runID string, tool Tool, p *profiles.Profile, secret profiles.Secret) (*broker.Broker, error) {
	return broker.New(broker.Config{Profile: p, Secret: secret, Transport: rt.opts.Transport,
		Now: rt.opts.Now, RunID: runID, Tool: tool.Name})
}

// refused is the result of a run that never started; its broker run records no calls.
func (rt *Runtime) refused(runID string, tool Tool, p *profiles.Profile, err error) Result {
	b, berr := rt.newBroker(runID, tool, p, profiles.Secret{})
	if berr != nil {
		res := unbrokered(runID, tool, err)
		res.Audit.Profile = p.Name
		return res
	}
	return Result{Err: err, Audit: b.Finish(statusOf(err), err)}
}

// unbrokered builds the audit line itself, for a run the broker cannot serve (no profile).
func unbrokered(runID string, tool Tool, err error) Result {
	return Result{Err: err, Audit: broker.Audit{RunID: runID, Tool: tool.Name, Status: statusOf(err), Error: err.Error()}}
}

// execute runs the guest and says how it ended.
func (rt *Runtime) execute(ctx context.Context, b *broker.Broker, tool Tool, p *profiles.Profile, input []byte) (out, log []byte, err error) {
	limits := p.Limits.OrDefaults() // a profile built in code may leave fields zero
	var g *guest
	var stdin []byte
	switch {
	case tool.isJS:
		preamble, err := p.ReadPreamble()
		if err != nil {
			return nil, nil, setupError("read the preamble", err)
		}
		// The engine stops a runaway tool at the deadline itself; the host closes the module
		// then too (WithCloseOnContextDone), for what runs in native code.
		deadline := time.Now().Add(limits.RunTimeout)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		if !engineDeadline {
			deadline = time.Time{}
		}
		if stdin, err = jsStdin(tool, input, preamble, deadline); err != nil {
			return nil, nil, setupError("read the input", err)
		}
		if g, err = rt.jsGuest(); err != nil {
			return nil, nil, err
		}
	case len(tool.wasm) > 0:
		stdin = input
		if g, err = rt.compile(ctx, tool.wasm); err != nil {
			return nil, nil, err
		}
		defer g.mod.Close(context.Background())
	default:
		return nil, nil, setupError("load the tool", errors.New("the tool has neither JavaScript source nor a wasm module"))
	}
	memLimit := uint64(limits.Memory)
	if g.minBytes > limits.Memory {
		return nil, nil, &LimitError{Limit: "limits.memory", Message: fmt.Sprintf(
			"memory limit limits.memory (%s) is below the %s the module needs to start",
			profiles.FormatSize(limits.Memory), profiles.FormatSize(g.minBytes))}
	}

	// The run's context ends at the run timeout, the caller's deadline, or a limit hit by a
	// writer; its cause says which.
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	runCtx, cancel := context.WithTimeoutCause(runCtx, limits.RunTimeout,
		&TimeoutError{Limit: "limits.run_timeout", After: limits.RunTimeout})
	defer cancel()
	stdout := &capped{max: limits.MaxOutputBytes, what: "output", field: "limits.max_output_bytes", stop: stop}
	stderr := &capped{max: limits.MaxLogBytes, what: "log", field: "limits.max_log_bytes", stop: stop}
	calls := hostfuncs.NewSession(b, limits)
	callCtx := hostfuncs.WithSession(runCtx, calls)

	var inst *instance
	if tool.isJS {
		inst = rt.pooled(memLimit)
	}
	fresh := inst == nil
	if fresh {
		if inst, err = rt.newInstance(callCtx, g, memLimit); err != nil {
			return nil, nil, rt.startError(runCtx, err)
		}
	}
	defer inst.close(context.Background())
	inst.mem.limit = memLimit
	inst.port.stdin, inst.port.stdout, inst.port.stderr, inst.port.ctx = bytes.NewReader(stdin), stdout, stderr, runCtx

	var ret int32
	var callErr error
	switch {
	case g.entry == command:
		_, callErr = inst.mod.ExportedFunction("_start").Call(callCtx)
	case fresh:
		callErr = inst.initialize(callCtx)
		fallthrough
	default:
		if callErr == nil {
			var res []uint64
			if res, callErr = inst.mod.ExportedFunction("run").Call(callCtx); callErr == nil {
				ret = int32(res[0])
			}
		}
	}
	err = rt.outcome(runCtx, tool.isJS, calls, stdout, stderr, inst.mem, ret, callErr)
	return stdout.buf.Bytes(), stderr.buf.Bytes(), err
}

// outcome says how a guest call ended. Checks run from the most specific cause to the least: a
// limit the host enforced, the guest's own result, the run's context, a refused memory growth,
// and last the exit code or trap.
func (rt *Runtime) outcome(runCtx context.Context, js bool, calls *hostfuncs.Session, stdout, stderr *capped,
	mem *memory, ret int32, callErr error) error {
	if err := calls.Err(); err != nil {
		return callLimit(err)
	}
	if stdout.err != nil {
		return stdout.err
	}
	if stderr.err != nil {
		return stderr.err
	}
	log := stderr.buf.Bytes()
	if js && runCtx.Err() != nil && !rt.closed.Load() {
		// The run ended (timeout, cancelation, a limit) while the engine was still running: it
		// has no close-on-context-done to stop it there, so whatever it did after is not a result.
		return contextError(runCtx)
	}
	if callErr == nil {
		switch {
		case ret == 0:
			return nil
		case js && ret == jsguest.ExitLimited:
			return rt.engineLimit(runCtx, mem, log)
		default:
			return &ToolError{ExitCode: int(ret), Message: logReason(log, false)}
		}
	}
	if rt.closed.Load() {
		return ErrClosed // wazero closes every module with exit code 0 when the runtime closes
	}
	var exit *sys.ExitError
	isExit := errors.As(callErr, &exit)
	if isExit && exit.ExitCode() == 0 {
		return nil
	}
	if js && isExit && exit.ExitCode() == jsguest.ExitLimited { // the engine's deadline check
		return rt.engineLimit(runCtx, mem, log)
	}
	if runCtx.Err() != nil {
		return contextError(runCtx)
	}
	if mem.refused != 0 {
		return memoryLimit(mem.limit)
	}
	if isExit {
		return &ToolError{ExitCode: int(exit.ExitCode()), Message: logReason(log, exit.ExitCode() == 2)}
	}
	// A trap: a Go guest's panic aborts with "unreachable" after printing "panic: ...".
	trap, _, _ := strings.Cut(callErr.Error(), "\n")
	if reason := logReason(log, true); reason != "" {
		trap = reason + " (" + trap + ")"
	}
	return &ToolError{ExitCode: -1, Message: trap}
}

// startError says why instantiating a fresh instance failed.
func (rt *Runtime) startError(runCtx context.Context, err error) error {
	var limit *LimitError
	switch {
	case errors.As(err, &limit):
		return err
	case rt.closed.Load():
		return ErrClosed
	case runCtx.Err() != nil:
		return contextError(runCtx)
	}
	return setupError("instantiate the module", err)
}

// engineLimit reports a run the JS engine stopped at a limit: out of memory is the memory limit
// (the host refused the growth), the deadline is the run's timeout (the host's own clock says so
// a moment later, if not already), anything else a guest limit.
func (rt *Runtime) engineLimit(runCtx context.Context, mem *memory, log []byte) error {
	const prefix = "plimsoll: limit: "
	switch {
	case mem.refused != 0 || bytes.HasSuffix(bytes.TrimRight(log, "\n"), []byte(prefix+jsguest.LimitMemory)):
		return memoryLimit(mem.limit)
	case bytes.HasSuffix(bytes.TrimRight(log, "\n"), []byte(prefix+jsguest.LimitDeadline)):
		if rt.closed.Load() {
			return ErrClosed
		}
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-runCtx.Done():
		case <-t.C:
		}
		if runCtx.Err() != nil {
			return contextError(runCtx)
		}
		return &TimeoutError{}
	}
	return guestLimit(log)
}

// guestLimit reports a limit the JS runtime enforced, from the line it logs last:
// "plimsoll: limit: call stack depth 1500 exceeded".
func guestLimit(log []byte) error {
	const prefix = "plimsoll: limit: "
	msg := "a guest-side limit was reached"
	if i := bytes.LastIndex(log, []byte(prefix)); i >= 0 {
		line, _, _ := strings.Cut(string(log[i+len(prefix):]), "\n")
		msg = strings.TrimSpace(line)
	}
	return &LimitError{Limit: "guest", Message: "guest limit: " + msg}
}

// capped collects a guest's stdout or stderr up to a limit. The write that goes over it keeps
// what fits, fails, and ends the run with a LimitError.
type capped struct {
	buf   bytes.Buffer
	max   int64
	what  string // "output" or "log"
	field string // the profile field
	stop  context.CancelCauseFunc
	err   error
}

func (c *capped) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	room := c.max - int64(c.buf.Len())
	if int64(len(p)) <= room {
		return c.buf.Write(p)
	}
	c.buf.Write(p[:room])
	c.err = &LimitError{Limit: c.field, Message: fmt.Sprintf("%s limit %s (%s) reached", c.what, c.field, profiles.FormatSize(c.max))}
	c.stop(c.err)
	return int(room), c.err
}
