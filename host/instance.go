package host

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/plimsoll/plimsoll/internal/wasmbin"
	"github.com/plimsoll/plimsoll/profiles"
)

// instance is one guest module instance. It serves exactly one run and is then closed.
//
// A module's stdin, stdout, stderr and sleep are fixed when it is instantiated, but a pooled
// instance is instantiated before its run exists. So every instance gets ports that forward to
// whatever the run binds: one code path for fresh and pooled instances.
type instance struct {
	mod         api.Module
	mem         *memory
	port        *ports
	initialized bool // _initialize has run, or its result was restored from a snapshot
}

// ports is what an instance's WASI stdio and sleep forward to. The run goroutine binds it before
// calling into the guest, and the guest only uses it from inside that call.
type ports struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	ctx            context.Context // the run's: a sleep ends when it is done
	closed         *atomic.Bool    // the runtime's closed flag; nil for none
}

// farFuture is how far the guest's wall clock jumps once its run is over (canceled, timed out)
// or its runtime closed: past any deadline, so the JS engine's own deadline check ends the run.
const farFuture = 100 * 365 * 24 * time.Hour

// walltime is the guest's wall clock: the real one while the run is live.
func (p *ports) walltime() (sec int64, nsec int32) {
	now := time.Now()
	if (p.ctx != nil && p.ctx.Err() != nil) || (p.closed != nil && p.closed.Load()) {
		now = now.Add(farFuture)
	}
	return now.Unix(), int32(now.Nanosecond())
}

type stdinPort struct{ p *ports }

func (s stdinPort) Read(b []byte) (int, error) {
	if s.p.stdin == nil {
		return 0, io.EOF
	}
	return s.p.stdin.Read(b)
}

type stdoutPort struct{ p *ports }

func (s stdoutPort) Write(b []byte) (int, error) {
	if s.p.stdout == nil {
		return len(b), nil
	}
	return s.p.stdout.Write(b)
}

type stderrPort struct{ p *ports }

func (s stderrPort) Write(b []byte) (int, error) {
	if s.p.stderr == nil {
		return len(b), nil
	}
	return s.p.stderr.Write(b)
}

// sleep is the guest's nanosleep (poll_oneoff on a clock): a real sleep that ends early when the
// run is done, so a sleeping guest never outlives its deadline.
func (p *ports) sleep(ns int64) {
	if ns <= 0 {
		return
	}
	done := context.Background().Done()
	if p.ctx != nil {
		done = p.ctx.Done()
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}

// instantiate creates an instance of compiled with memory capped at memLimit bytes. It runs no
// start function: the caller runs _initialize or _start under the right context. With snap, the
// snapshot's image is mapped at the start of the memory where the platform allows; restore
// finishes the job.
// configure, if given, adds to the module's configuration (the Python guest's read-only /lib).
func instantiate(ctx context.Context, r wazero.Runtime, compiled wazero.CompiledModule, memLimit uint64, snap *snapshot, configure ...func(wazero.ModuleConfig) wazero.ModuleConfig) (*instance, error) {
	inst := &instance{mem: &memory{limit: memLimit}, port: &ports{}}
	if snap != nil {
		inst.mem.image = snap.file
	}
	cfg := wazero.NewModuleConfig().
		WithName(""). // anonymous: any number of instances may coexist
		WithStartFunctions().
		WithStdin(stdinPort{inst.port}).
		WithStdout(stdoutPort{inst.port}).
		WithStderr(stderrPort{inst.port}).
		WithWalltime(inst.port.walltime, sys.ClockResolution(time.Microsecond)).
		WithSysNanotime().
		WithNanosleep(inst.port.sleep).
		WithOsyield(runtime.Gosched). // the JS engine yields from its loops (Go cannot preempt wasm code)
		WithRandSource(rand.Reader)
	for _, c := range configure {
		cfg = c(cfg)
	}
	mod, err := r.InstantiateModule(experimental.WithMemoryAllocator(ctx, inst.mem), compiled, cfg)
	if err != nil {
		inst.mem.release()
		return nil, err
	}
	inst.mod = mod
	if inst.mem.refused != 0 {
		inst.close(ctx)
		return nil, memoryLimit(memLimit)
	}
	return inst, nil
}

// initialize runs the reactor's _initialize, if it has one and its result was not restored.
func (inst *instance) initialize(ctx context.Context) error {
	if inst.initialized {
		return nil
	}
	inst.initialized = true
	if fn := inst.mod.ExportedFunction("_initialize"); fn != nil {
		_, err := fn.Call(ctx)
		return err
	}
	return nil
}

// close closes the module and releases its memory. Call it once the guest has returned.
func (inst *instance) close(ctx context.Context) {
	_ = inst.mod.Close(ctx)
	inst.mem.release()
}

// entry says how a module is run.
type entry int

const (
	reactor entry = iota // _initialize (optional) then run() -> i32
	command              // _start; the exit code is the result
)

// entryOf finds a module's entry point, following the ABI: a reactor exports run, a command
// exports _start.
func entryOf(m wazero.CompiledModule) (entry, error) {
	fns := m.ExportedFunctions()
	if def, ok := fns["run"]; ok {
		if len(def.ParamTypes()) != 0 || len(def.ResultTypes()) != 1 || def.ResultTypes()[0] != api.ValueTypeI32 {
			return 0, errors.New("the module exports run, but not as run() -> i32")
		}
		return reactor, nil
	}
	if _, ok := fns["_start"]; ok {
		return command, nil
	}
	return 0, errors.New("the module exports neither run (a reactor) nor _start (a command)")
}

const wasmPage = 64 << 10

func memoryLimit(limit uint64) error {
	return &LimitError{Limit: "limits.memory", Message: fmt.Sprintf("memory limit limits.memory (%s) reached",
		profiles.FormatSize(int64(limit)))}
}

// declaredMinPages is the minimum size, in pages, of the memory a module defines. ok is false
// when the module defines no memory (or the binary cannot be read, in which case compiling it
// fails).
func declaredMinPages(bin []byte) (pages uint64, ok bool) {
	m, err := wasmbin.Read(bin)
	if err != nil {
		return 0, false
	}
	return m.MinPages()
}
