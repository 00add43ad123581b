package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/plimsoll/plimsoll/abi"
	pyguest "github.com/plimsoll/plimsoll/guests/python"
	"github.com/plimsoll/plimsoll/hostfuncs"
	"github.com/plimsoll/plimsoll/profiles"
)

// KindPython names Python tools (PythonTool).
const KindPython = "python"

// PythonTool is a Python tool: src is the body of an async function with input and api in scope
// (guests/python).
func PythonTool(name, src string) Tool { return Tool{Name: name, src: pythonSource(src)} }

// pythonSource is a Python tool's source.
type pythonSource string

func (pythonSource) kind() string { return KindPython }

func pythonFromSource(name string, src []byte) Tool { return PythonTool(name, string(src)) }

// pythonKind runs Python tools on the embedded CPython (guests/python), in a wazero runtime of its
// own without close-on-context-done: the interpreter checks the run's deadline from every loop of
// its compiled code and ends itself, as the JS engine does. The interpreter is compiled and started
// once per process, in a template instance whose memory after start-up (the interpreter, the
// engine and the modules it imports) is the snapshot every run's fresh instance begins from.
type pythonKind struct {
	rt    *Runtime
	r     wazero.Runtime
	guest func() (*guest, error) // compiled and snapshotted once, on first use

	mu       sync.Mutex // guards snap and released: a start may end after the runtime closed
	snap     *snapshot
	released bool

	preloads *moduleCache // the interpreter with a profile's preamble run (pythonpreload.go)
}

func newPythonKind(ctx context.Context, rt *Runtime) (guestKind, error) {
	r, err := rt.newEngine(ctx, false)
	if err != nil {
		return nil, err
	}
	k := &pythonKind{rt: rt, r: r, preloads: newPreloadCache()}
	k.guest = sync.OnceValues(k.start)
	return k, nil
}

// mountLib gives the guest its one directory, /lib, read-only.
func mountLib(cfg wazero.ModuleConfig) wazero.ModuleConfig {
	return cfg.WithFSConfig(wazero.NewFSConfig().WithFSMount(pyguest.Lib(), pyguest.MountPoint))
}

// start compiles the interpreter and takes its snapshot after start-up. Unlike the JS engine it
// has no fallback without a snapshot: starting CPython costs every run 50–100 ms.
func (k *pythonKind) start() (*guest, error) {
	ctx := context.Background()
	mod, data, globals, ok := prepareJS(pyguest.Wasm())
	if !ok {
		return nil, setupError("prepare the Python interpreter", errors.New("its module cannot be snapshotted"))
	}
	g, err := k.rt.compileIn(ctx, k.r, mod)
	if err != nil {
		return nil, err
	}
	if k.rt.closed.Load() { // Close is waiting: skip the interpreter's start
		g.mod.Close(ctx)
		return nil, ErrClosed
	}
	if g.snap, err = takeSnapshot(ctx, k.r, g.mod, data, globals, mountLib); err != nil {
		g.mod.Close(ctx)
		return nil, setupError("start the Python interpreter", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.released {
		g.snap.close()
		return nil, ErrClosed
	}
	k.snap = g.snap
	return g, nil
}

// prepare compiles and starts the interpreter (Runtime.PreparePython).
func (k *pythonKind) prepare() error {
	_, err := k.guest()
	return err
}

func (k *pythonKind) load(ctx context.Context, tool Tool, p *profiles.Profile, _ profiles.Limits, input []byte) (*guest, []byte, error) {
	g, err := k.guest()
	if err != nil {
		return nil, nil, err
	}
	deadline, _ := ctx.Deadline()
	if !engineDeadline {
		deadline = time.Time{}
	}
	preamble, err := p.ReadPreamblePython()
	if err != nil {
		return nil, nil, setupError("read the Python preamble", err)
	}
	req, err := engineRequest(tool.Name, string(tool.src.(pythonSource)), input, preamble, deadline) // the Python engine reads the JS engine's request
	if err != nil {
		return nil, nil, setupError("read the input", err)
	}
	var preloaded string
	if preamble != "" && pythonPreload {
		pg, key, err := k.withPreamble(ctx, g, preamble)
		if err != nil && ctx.Err() != nil {
			return nil, nil, contextError(ctx)
		}
		if pg != nil {
			g, req.Preamble, preloaded = pg, "", key // run in pg's snapshot already
		}
	}
	stdin, err := json.Marshal(pyRequest{jsRequest: req, Preloaded: preloaded})
	if err != nil {
		if g.release != nil {
			g.release()
		}
		return nil, nil, setupError("read the input", err)
	}
	return g, stdin, nil
}

func (k *pythonKind) pooled(*guest, uint64) *instance { return nil }

// call restores a fresh instance from the snapshot, with /lib mounted, and runs the tool.
func (k *pythonKind) call(st *runState, stdin []byte) (int32, error) {
	memLimit := uint64(st.limits.Memory)
	callCtx := hostfuncs.WithSession(st.ctx, st.session)
	g := st.guest
	inst, err := instantiate(callCtx, g.r, g.mod, memLimit, g.snap, mountLib)
	if err != nil {
		return 0, k.rt.startError(st.ctx, err)
	}
	st.inst = inst
	inst.port.closed = &k.rt.closed
	if err := g.snap.restore(inst); err != nil {
		return 0, k.rt.startError(st.ctx, err)
	}
	inst.port.stdin, inst.port.stdout, inst.port.stderr, inst.port.ctx = bytes.NewReader(stdin), st.stdout, st.stderr, st.ctx
	res, err := inst.mod.ExportedFunction(abi.ExportRun).Call(callCtx)
	if err != nil {
		return 0, err
	}
	return int32(res[0]), nil
}

// ended reads how the interpreter ended, as jsKind.ended does: a run whose context ended while
// the guest ran is reported by its context; abi.ExitLimited, returned from run or given to
// proc_exit by the deadline check, is a limit the guest enforced, named on its last log line.
func (k *pythonKind) ended(st *runState, ret int32, callErr error) (error, bool) {
	if st.ctx.Err() != nil && !k.rt.closed.Load() {
		return contextError(st.ctx), true
	}
	var exit *sys.ExitError
	if (callErr == nil && ret == abi.ExitLimited) || (errors.As(callErr, &exit) && exit.ExitCode() == uint32(abi.ExitLimited)) {
		return k.guestStopped(st), true
	}
	if errors.As(callErr, &exit) && !k.rt.closed.Load() {
		// The interpreter exits only at the deadline: any other exit is the tool's os._exit.
		return &ToolError{ExitCode: int(exit.ExitCode()), Message: fmt.Sprintf(
			"the tool ended the interpreter with os._exit(%d) instead of returning a result", exit.ExitCode())}, true
	}
	return nil, false
}

// guestStopped reports a run the interpreter stopped at a limit (engineStopped, outcome.go).
func (k *pythonKind) guestStopped(st *runState) error {
	return engineStopped(k.rt, st, pyguest.LimitMemory, pyguest.LimitDeadline)
}

func (k *pythonKind) stop(context.Context) {}

func (k *pythonKind) release() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.released = true
	k.snap.close()
	k.preloads.closeAll()
}

// PreparePython compiles the Python interpreter and starts it for its snapshot now, rather than
// at the first Python run (seconds with an empty compilation cache, under a second with a warm
// one). A daemon calls it in the background at start-up. It is safe to call more than once.
// Close waits for it as for a run.
func (rt *Runtime) PreparePython() error {
	if !rt.enter() {
		return ErrClosed
	}
	defer rt.running.Done()
	return rt.kinds[KindPython].(*pythonKind).prepare()
}
