package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/plimsoll/plimsoll/abi"
	jsguest "github.com/plimsoll/plimsoll/guests/quickjs"
	"github.com/plimsoll/plimsoll/profiles"
)

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

// jsKind runs JavaScript tools on the embedded QuickJS-ng engine, in a wazero runtime of its own
// (without close-on-context-done: the engine stops itself). The engine is compiled once, its
// state after _initialize is snapshotted (snapshot.go), and with Options.PoolSize a pool keeps
// instances ready.
type jsKind struct {
	rt    *Runtime
	r     wazero.Runtime
	guest func() (*guest, error) // compiled once, on first use
	snap  *snapshot              // the engine's, once compiled; guarded by guest's once
	dir   string                 // where the decompressed engine is kept; "" for nowhere
	pool  *pool                  // nil when Options.PoolSize is 0

	preloads *moduleCache // the engine with a profile's preamble evaluated (preload.go)
}

// KindJS names JavaScript tools (JSTool).
const KindJS = "js"

// JSTool is a JavaScript tool: src is the body of an async function with input in scope.
func JSTool(name, src string) Tool { return Tool{Name: name, src: jsSource(src)} }

// jsSource is a JavaScript tool's source.
type jsSource string

func (jsSource) kind() string { return KindJS }

func jsFromSource(name string, src []byte) Tool { return JSTool(name, string(src)) }

func newJSKind(ctx context.Context, rt *Runtime) (guestKind, error) {
	r, err := rt.newEngine(ctx, closeOnContextDone)
	if err != nil {
		return nil, err
	}
	k := &jsKind{rt: rt, r: r, dir: rt.dir, preloads: newPreloadCache()}
	k.guest = sync.OnceValues(k.compileEngine)
	return k, nil
}

func (k *jsKind) startPool(size int) { k.pool = k.rt.startPool(size, k.prepared) }

// compileEngine compiles the engine, from the decompressed copy when there is a good one.
func (k *jsKind) compileEngine() (*guest, error) {
	bin, fromCopy := jsModule(k.dir)
	g, err := k.compileSnapshot(bin)
	if err != nil && fromCopy { // a damaged copy: start again from the embedded bytes
		os.Remove(jsCopyPath(k.dir))
		g, err = k.compileSnapshot(jsguest.Wasm())
	}
	if err == nil {
		k.snap = g.snap // for release
	}
	return g, err
}

// compileSnapshot compiles the engine and takes its snapshot (see snapshot.go). When the
// snapshot cannot be taken, it compiles the module as it is, and every instance runs
// _initialize, which then reports any error.
func (k *jsKind) compileSnapshot(bin []byte) (*guest, error) {
	ctx := context.Background()
	if mod, data, globals, ok := prepareJS(bin); ok {
		g, err := k.rt.compileIn(ctx, k.r, mod)
		if err == nil {
			if g.snap, err = takeSnapshot(ctx, k.r, g.mod, data, globals); err == nil {
				return g, nil
			}
			g.mod.Close(ctx)
		}
	}
	return k.rt.compileIn(ctx, k.r, coalesceData(bin))
}

// prepared is a new engine instance, initialised, for the pool.
func (k *jsKind) prepared(ctx context.Context) (*instance, error) {
	g, err := k.guest()
	if err != nil {
		return nil, err
	}
	inst, err := k.rt.newInstance(ctx, g, profiles.MaxMemory)
	if err != nil {
		return nil, err
	}
	if err := inst.initialize(ctx); err != nil {
		inst.close(context.Background())
		return nil, err
	}
	return inst, nil
}

// load compiles the engine on first use (not bounded by one run's deadline: every run shares
// it) and builds the engine's stdin from the tool, its input, the profile's preamble and the
// run's deadline (ctx's: the earlier of the run timeout and the caller's), which the engine
// enforces itself.
func (k *jsKind) load(ctx context.Context, tool Tool, p *profiles.Profile, _ profiles.Limits, input []byte) (*guest, []byte, error) {
	preamble, err := p.ReadPreamble()
	if err != nil {
		return nil, nil, setupError("read the preamble", err)
	}
	g, err := k.guest()
	if err != nil {
		return nil, nil, err
	}
	if preamble != "" {
		pg, err := k.withPreamble(ctx, g, preamble)
		if err != nil && ctx.Err() != nil {
			return nil, nil, contextError(ctx)
		}
		if pg != nil {
			g, preamble = pg, "" // evaluated in pg's snapshot already
		}
	}
	deadline, _ := ctx.Deadline()
	if !engineDeadline {
		deadline = time.Time{}
	}
	stdin, err := engineStdin(tool.Name, string(tool.src.(jsSource)), input, preamble, deadline)
	if err != nil {
		if g.release != nil {
			g.release()
		}
		return nil, nil, setupError("read the input", err)
	}
	return g, stdin, nil
}

func (k *jsKind) pooled(g *guest, memLimit uint64) *instance {
	if base, err := k.guest(); k.pool == nil || err != nil || g != base {
		return nil // pooled instances start from the engine's own snapshot, without a preamble
	}
	return k.pool.take(memLimit)
}

// ended reads how the engine ended. A run whose context ended while the engine still ran is
// reported by its context (the engine has no close-on-context-done to stop it there, so what it
// did after is no result); abi.ExitLimited, returned from run or given to proc_exit by the
// engine's deadline check, is a limit the engine enforced, named on the last line it logged.
func (k *jsKind) ended(st *runState, ret int32, callErr error) (error, bool) {
	if st.ctx.Err() != nil && !k.rt.closed.Load() {
		return contextError(st.ctx), true
	}
	var exit *sys.ExitError
	if (callErr == nil && ret == abi.ExitLimited) || (errors.As(callErr, &exit) && exit.ExitCode() == uint32(abi.ExitLimited)) {
		return k.engineLimit(st), true
	}
	return nil, false
}

// engineLimit reports a run the engine stopped at a limit (engineStopped, outcome.go).
func (k *jsKind) engineLimit(st *runState) error {
	return engineStopped(k.rt, st, jsguest.LimitMemory, jsguest.LimitDeadline)
}

func (k *jsKind) stop(ctx context.Context) {
	if k.pool != nil {
		k.pool.stop(ctx)
	}
}

func (k *jsKind) release() {
	k.snap.close()
	k.preloads.closeAll()
}

// guestLimit reports a limit the JS engine enforced, from the line it logs last:
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

// jsRequest is the JS engine's stdin (see guests/quickjs). DeadlineUnixMs is the run's deadline
// on the wall clock, which the engine's own checks use to stop a runaway tool.
type jsRequest struct {
	Tool           string          `json:"tool"`
	Input          json.RawMessage `json:"input"`
	Preamble       string          `json:"preamble"`
	Name           string          `json:"name"`
	DeadlineUnixMs int64           `json:"deadline_unix_ms,omitempty"`
}

var errInputNotJSON = errors.New("the input is not valid JSON")

// engineStdin builds an engine guest's stdin (QuickJS-ng and CPython read the same request).
// Empty input is null; a zero deadline is none.
func engineStdin(name, src string, input []byte, preamble string, deadline time.Time) ([]byte, error) {
	req, err := engineRequest(name, src, input, preamble, deadline)
	if err != nil {
		return nil, err
	}
	return json.Marshal(req)
}

// engineRequest is the request engineStdin writes.
func engineRequest(name, src string, input []byte, preamble string, deadline time.Time) (jsRequest, error) {
	in := json.RawMessage("null")
	if len(bytes.TrimSpace(input)) > 0 {
		if !json.Valid(input) {
			return jsRequest{}, errInputNotJSON
		}
		in = input
	}
	req := jsRequest{Tool: src, Input: in, Preamble: preamble, Name: name}
	if !deadline.IsZero() {
		req.DeadlineUnixMs = deadline.UnixMilli()
	}
	return req, nil
}
