package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/tetratelabs/wazero"

	"github.com/plimsoll/plimsoll/abi"
)

// A profile's Python preamble (specgen's client: 873 KB for GitHub's API) was compiled and run at
// the start of every run of that profile: +12–24 ms for a 6-operation client, +95–240 ms for
// GitHub's, about half compiling it and half building its tables (BENCHMARKS.md). As for the JS engine
// (preload.go), the engine runs it once instead, in a template restored from the interpreter's
// snapshot and never used for a run (a "preload" request), and that state is snapshotted in
// turn, by the preamble's sha256: runs of any profile with the same preamble start from it and
// skip both. The template shares with runs only state built from operator-supplied code before
// any tool ran; a preamble that logs or fails there is left to each run, as before.

// pythonPreload turns preloading on; benchmarks turn it off to measure each run evaluating the
// preamble itself, as before.
var pythonPreload = true

// pyRequest is the Python engine's run request: the JS engine's, or a run that starts from the
// preamble preloaded under Preloaded (hex sha256) in its snapshot.
type pyRequest struct {
	jsRequest
	Preloaded string `json:"preloaded,omitempty"`
}

// pyPreloadRequest asks the engine to run Preamble once, outside any run, and keep its scope
// under Preload.
type pyPreloadRequest struct {
	Preload  string `json:"preload"`
	Preamble string `json:"preamble"`
}

// errPreloadStopped ends a preload that ran past preloadTimeout or outlived the runtime.
var errPreloadStopped = errors.New("the preamble ran past its time outside any run")

// maxPreloadMemory bounds a template's memory, and so a kept image (GitHub's client: 27 MiB): a
// preamble that needs more is left to the runs, under their own limits.memory.
const maxPreloadMemory = 256 << 20

// withPreamble returns the interpreter's guest with preamble already run, held for the run (its
// release gives it back), and the key runs name it by; nil when preamble cannot be run outside
// a run (it fails, logs or was stopped there: each run then runs it itself, as before). The run
// waits for a preload that is under way until ctx ends; the preload goes on for later runs.
func (k *pythonKind) withPreamble(ctx context.Context, base *guest, preamble string) (*guest, string, error) {
	sum := sha256.Sum256([]byte(preamble))
	key := hex.EncodeToString(sum[:])
	g, err := k.preloads.get(ctx, sum, len(preamble), func() (*guest, error) { return k.preloadOutsideRuns(base, preamble, key) })
	if err != nil {
		return nil, "", err
	}
	if g.snap == nil { // kept as unfit, so later runs do not try again
		g.release()
		return nil, "", nil
	}
	return g, key, nil
}

// preloadOutsideRuns runs preload as a run of its own, which Close waits for, bounded by
// preloadTimeout. A preamble that cannot be preloaded gives a guest without a snapshot.
func (k *pythonKind) preloadOutsideRuns(base *guest, preamble, key string) (*guest, error) {
	if !k.rt.enter() {
		return nil, ErrClosed
	}
	defer k.rt.running.Done()
	ctx, cancel := context.WithTimeout(context.Background(), preloadTimeout)
	defer cancel()
	g, err := k.preload(ctx, base, preamble, key, maxPreloadMemory)
	if err != nil {
		return &guest{}, nil
	}
	return g, nil
}

// preload runs preamble in a template instance restored from base's snapshot and takes a
// snapshot of the result. No deadline is armed there (a run arms its own, once per instance):
// the interpreter's loops yield to the host every LoopTick iterations, and a yield once ctx is
// done (preloadTimeout) or the runtime closed ends the template. Its memory is capped at memLimit.
func (k *pythonKind) preload(ctx context.Context, base *guest, preamble, key string, memLimit uint64) (*guest, error) {
	inst, err := instantiate(ctx, base.r, base.mod, memLimit, base.snap, mountLib, stopOnYield(ctx, &k.rt.closed))
	if err != nil {
		return nil, err
	}
	defer inst.close(context.Background())
	inst.port.closed = &k.rt.closed
	if err := base.snap.restore(inst); err != nil {
		return nil, err
	}
	req, err := json.Marshal(pyPreloadRequest{Preload: key, Preamble: preamble})
	if err != nil {
		return nil, err
	}
	var log bytes.Buffer
	inst.port.stdin, inst.port.stdout, inst.port.stderr, inst.port.ctx = bytes.NewReader(req), &log, &log, ctx
	res, err := inst.mod.ExportedFunction(abi.ExportRun).Call(ctx)
	switch {
	case err != nil:
		return nil, err
	case ctx.Err() != nil: // a sleep cut short: the preamble did not run as a run would run it
		return nil, errPreloadStopped
	case int32(res[0]) != abi.ExitOK:
		return nil, fmt.Errorf("the preamble failed: %s", logReason(log.Bytes(), false))
	case log.Len() > 0: // what it writes belongs in every run's log or output
		return nil, errors.New("the preamble logs when it runs")
	}
	return snapshotGuest(base, inst.mod)
}

// stopOnYield makes the guest's yields end it once ctx is done or the runtime closed.
func stopOnYield(ctx context.Context, closed *atomic.Bool) func(wazero.ModuleConfig) wazero.ModuleConfig {
	return func(cfg wazero.ModuleConfig) wazero.ModuleConfig {
		return cfg.WithOsyield(func() {
			runtime.Gosched()
			if ctx.Err() != nil || closed.Load() {
				panic(errPreloadStopped) // unwinds the template, which is then closed
			}
		})
	}
}
