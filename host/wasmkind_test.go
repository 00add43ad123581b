package host

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

func (rt *Runtime) wasmTools() *wasmKind { return rt.kinds[KindWasm].(*wasmKind) }

// A .wasm tool is compiled once and reused by content hash.
func TestWasmToolsAreCompiledOnce(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	rt := newRuntime(t, Options{})
	for range 3 {
		res := rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "state"}))
		require.NoError(t, res.Err)
		assert.Equal(t, "1\n", string(res.Output), "each run still gets a fresh instance")
	}
	assert.Equal(t, int64(1), rt.wasmTools().compiled.Load())
	other := append(append([]byte(nil), goGuest().src.(module).wasm...), section(0, []byte{1, 'z', 0})...) // same code, other bytes
	require.NoError(t, rt.Run(context.Background(), WasmTool("other", other), p, guestCmd(map[string]any{"op": "state"})).Err)
	assert.Equal(t, int64(2), rt.wasmTools().compiled.Load())
}

// Compiling is bounded by the run's deadline: a run whose compilation cannot finish in time ends
// as a timeout with its audit line, and the compilation, once done, serves the next run.
func TestCompilationIsBoundedByTheRunDeadline(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	rt := newRuntime(t, Options{})
	k := rt.wasmTools()
	for range cap(k.compiles) { // every compile slot taken: the compilation waits
		k.compiles <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res := rt.Run(ctx, goGuest(), p, guestCmd(map[string]any{"op": "state"}))
	require.ErrorIs(t, res.Err, ErrTimeout)
	assert.Equal(t, broker.StatusTimeout, res.Audit.Status)
	assert.Zero(t, k.compiled.Load(), "the compilation had not started")

	for range cap(k.compiles) {
		<-k.compiles
	}
	res = rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "state"}))
	require.NoError(t, res.Err)
	assert.Equal(t, int64(1), k.compiled.Load(), "the waiting compilation served this run")
}

// The cache evicts the least recently used module past its bounds, and never closes a module a
// run still holds.
func TestModuleCacheEvictsWhatNoRunHolds(t *testing.T) {
	rt := newRuntime(t, Options{})
	c := newModuleCache(2, 1<<30)
	mod := func(tag byte) ([32]byte, func() (*guest, error)) {
		bin := wasmModule(typeVoid, funcs(1), exportStart0, bodies(1, uint64(tag)))
		return sha256.Sum256(bin), func() (*guest, error) { return rt.compile(context.Background(), bin) }
	}
	ctx := context.Background()
	ka, ca := mod(1)
	kb, cb := mod(2)
	kc, cc := mod(3)
	a, err := c.get(ctx, ka, 10, ca)
	require.NoError(t, err)
	b, err := c.get(ctx, kb, 10, cb)
	require.NoError(t, err)
	b.release()
	_, err = c.get(ctx, kc, 10, cc) // evicts a (least recently used), which a run still holds
	require.NoError(t, err)

	c.mu.Lock()
	assert.NotContains(t, c.entries, ka)
	assert.Contains(t, c.entries, kb)
	assert.Contains(t, c.entries, kc)
	c.mu.Unlock()
	inst, err := instantiate(ctx, rt.r, a.mod, 1<<30, nil)
	require.NoError(t, err, "a module still held by a run stays open")
	inst.close(ctx)
	a.release()
	_, err = instantiate(ctx, rt.r, a.mod, 1<<30, nil)
	assert.Error(t, err, "closed once its last run is done")
}
