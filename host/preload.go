package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/plimsoll/plimsoll/profiles"
)

// A profile's API preamble (specgen's generated client: 630 KB for GitHub's API) was evaluated at
// the start of every run of that profile, ~28 ms on the engine. The engine evaluates it once
// instead, in a template restored from the engine's snapshot and never used for a run
// (plimsoll_preload), and that state is snapshotted in turn: runs of any profile with the same
// preamble start from it and skip the evaluation. What the template shares with runs is what the
// generic preamble's snapshot does: state built from operator-supplied code before any tool ran.

// preloadExport is the engine's export that evaluates a preamble outside any run.
const preloadExport = "plimsoll_preload"

// preloadTimeout bounds one preamble's evaluation in the template: it is the operator's code,
// but a loop in it must not hold the runs that wait for it.
const preloadTimeout = 10 * time.Second

// maxPreloaded is how many preloaded snapshots are kept, least recently used first out.
const maxPreloaded = 8

// maxPreloadedBytes bounds the preambles kept preloaded (by their source's size): maxPreloaded
// counts them already, and each image is shared copy-on-write by its runs.
const maxPreloadedBytes = 64 << 20

// newPreloadCache keeps preloaded engines like compiled tools: built once however many runs ask,
// a run waiting only until its own deadline, an image closed only once no run holds it (a run
// holds it from load until its instance has mapped it).
func newPreloadCache() *moduleCache {
	c := newModuleCache(maxPreloaded, maxPreloadedBytes)
	c.closeGuest = func(g *guest) { g.snap.close() } // the engine's compiled module stays
	return c
}

// withPreamble returns the engine's guest with preamble already evaluated, held for the run (its
// release gives it back); nil when the preamble cannot be evaluated outside a run (it fails
// there: the run then evaluates it itself and reports that failure as it always has). The run
// waits for a preload under way until ctx ends.
func (k *jsKind) withPreamble(ctx context.Context, base *guest, preamble string) (*guest, error) {
	key := sha256.Sum256([]byte(preamble))
	g, err := k.preloads.get(ctx, key, len(preamble), func() (*guest, error) { return k.preloadOutsideRuns(base, preamble) })
	if err != nil {
		return nil, err
	}
	if g.snap == nil { // kept as unfit, so later runs do not try again
		g.release()
		return nil, nil
	}
	return g, nil
}

// preloadOutsideRuns evaluates preamble as a run of its own, which Close waits for. A preamble
// that fails there gives a guest without a snapshot.
func (k *jsKind) preloadOutsideRuns(base *guest, preamble string) (*guest, error) {
	if !k.rt.enter() {
		return nil, ErrClosed
	}
	defer k.rt.running.Done()
	g, err := k.preload(base, preamble)
	if err != nil {
		return &guest{}, nil
	}
	return g, nil
}

// preload evaluates preamble in a template instance restored from base's snapshot and takes a
// snapshot of the result.
func (k *jsKind) preload(base *guest, preamble string) (*guest, error) {
	if base.snap == nil {
		return nil, errors.New("the engine has no snapshot to start from")
	}
	ctx, cancel := context.WithTimeout(context.Background(), preloadTimeout)
	defer cancel()
	inst, err := k.rt.newInstance(ctx, base, profiles.MaxMemory)
	if err != nil {
		return nil, err
	}
	defer inst.close(context.Background())
	fn := inst.mod.ExportedFunction(preloadExport)
	if fn == nil {
		return nil, errors.New("the engine does not export " + preloadExport)
	}
	deadline, _ := ctx.Deadline()
	stdin, err := engineStdin("", "", nil, preamble, deadline)
	if err != nil {
		return nil, err
	}
	var log bytes.Buffer
	inst.port.stdin, inst.port.stderr, inst.port.ctx = bytes.NewReader(stdin), &log, ctx
	res, err := fn.Call(ctx)
	if err == nil && int32(res[0]) != 0 {
		err = fmt.Errorf("the preamble failed: %s", logReason(log.Bytes(), false))
	}
	if err != nil {
		return nil, err
	}
	return snapshotGuest(base, inst.mod)
}

// snapshotGuest is base, starting from mod's current state instead of base's snapshot.
func snapshotGuest(base *guest, mod api.Module) (*guest, error) {
	snap, err := snapshotOf(mod, base.snap.globals)
	if err != nil {
		return nil, err
	}
	g := *base
	g.snap = snap
	return &g, nil
}

// snapshotOf keeps a live instance's memory and the values of the given mutable globals.
func snapshotOf(mod api.Module, globals []global) (*snapshot, error) {
	mem := mod.Memory()
	if mem == nil {
		return nil, errors.New("the module has no memory")
	}
	data, _ := mem.Read(0, mem.Size())
	s := &snapshot{size: uint64(len(data))}
	for _, g := range globals {
		mg, ok := mod.ExportedGlobal(g.name).(api.MutableGlobal)
		if !ok {
			return nil, errors.New("host: reading the JS engine's globals failed")
		}
		s.globals = append(s.globals, global{name: g.name, value: mg.Get()})
	}
	var err error
	if s.file, err = newImage(data); err != nil {
		s.image = bytes.Clone(data)
	}
	return s, nil
}
