package host

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// A profile's preamble is evaluated once, in a template, and its runs start from that state:
// what the preamble computed is the same in every run, while each run still draws its own
// randomness and sees none of another run's state.
func TestPreambleIsEvaluatedOnceAndRunsStayApart(t *testing.T) {
	ps := newPetstore(t)
	dir := t.TempDir()
	preamble := filepath.Join(dir, "pets.preamble.js")
	require.NoError(t, os.WriteFile(preamble, []byte(`globalThis.atLoad = Math.random(); globalThis.counter = 0;`), 0o644))
	p := profile(t, ps.URL, "preamble: "+preamble+"\n")
	rt := newRuntime(t, Options{})
	tool := JSTool("t.js", `counter++; return [atLoad, Math.random(), counter, typeof api.get];`)

	var runs [][]any
	for range 2 {
		res := rt.Run(context.Background(), tool, p, nil)
		require.NoError(t, res.Err, string(res.Log))
		var out []any
		require.NoError(t, json.Unmarshal(res.Output, &out))
		runs = append(runs, out)
	}
	assert.Equal(t, runs[0][0], runs[1][0], "the preamble ran once: its value is the same in both runs")
	assert.NotEqual(t, runs[0][1], runs[1][1], "each run draws its own randomness")
	assert.Equal(t, 1.0, runs[1][2], "a run sees none of the previous run's state")
	assert.Equal(t, "function", runs[1][3])

	k := rt.jsEngine()
	k.preloads.mu.Lock()
	defer k.preloads.mu.Unlock()
	require.Len(t, k.preloads.entries, 1)
	for _, e := range k.preloads.entries {
		require.NoError(t, e.err)
		require.NotNil(t, e.g.snap)
	}
}

// A preamble that fails in the template is evaluated by each run instead, which reports the
// failure as it always has, with its audit line.
func TestPreambleThatFailsIsReportedByTheRun(t *testing.T) {
	ps := newPetstore(t)
	dir := t.TempDir()
	preamble := filepath.Join(dir, "pets.preamble.js")
	require.NoError(t, os.WriteFile(preamble, []byte(`throw new Error("preamble broke");`), 0o644))
	p := profile(t, ps.URL, "preamble: "+preamble+"\n")
	res := shared(t).Run(context.Background(), JSTool("t.js", `return 1;`), p, nil)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "preamble broke")
	assert.Equal(t, broker.StatusError, res.Audit.Status)
}

// Up to maxPreloaded preambles are kept; the least recently used goes first.
func TestPreloadsAreBounded(t *testing.T) {
	ps := newPetstore(t)
	dir := t.TempDir()
	rt := newRuntime(t, Options{})
	for i := range maxPreloaded + 2 {
		path := filepath.Join(dir, "p.preamble.js")
		require.NoError(t, os.WriteFile(path, []byte("globalThis.n = "+string(rune('0'+i))+";"), 0o644))
		p := profile(t, ps.URL, "preamble: "+path+"\n")
		res := rt.Run(context.Background(), JSTool("t.js", `return n;`), p, nil)
		require.NoError(t, res.Err, string(res.Log))
		assert.Equal(t, string(rune('0'+i)), string(res.Output))
	}
	k := rt.jsEngine()
	k.preloads.mu.Lock()
	defer k.preloads.mu.Unlock()
	assert.Len(t, k.preloads.entries, maxPreloaded)
	assert.Len(t, k.preloads.order, maxPreloaded)
}

// A run holds its preloaded engine from load until its instance has mapped it: eight other
// preambles evicting it meanwhile do not close the image under the run; the last hold does.
func TestAHeldPreloadOutlivesItsEviction(t *testing.T) {
	rt := newRuntime(t, Options{})
	k := rt.jsEngine()
	base, err := k.guest()
	require.NoError(t, err)
	ctx := context.Background()
	held, err := k.withPreamble(ctx, base, `globalThis.n = "held";`)
	require.NoError(t, err)
	require.NotNil(t, held)
	for i := range maxPreloaded {
		g, err := k.withPreamble(ctx, base, fmt.Sprintf("globalThis.n = %d;", i))
		require.NoError(t, err)
		g.release()
	}
	k.preloads.mu.Lock()
	_, kept := k.preloads.entries[sha256.Sum256([]byte(`globalThis.n = "held";`))]
	k.preloads.mu.Unlock()
	require.False(t, kept, "evicted by the eight after it")

	inst, err := rt.newInstance(ctx, held, profiles.MaxMemory)
	require.NoError(t, err, "the held image is still open")
	inst.close(ctx)
	held.release()
	if held.snap.file != nil && held.snap.image == nil { // an image the last hold closes
		_, err := rt.newInstance(ctx, held, profiles.MaxMemory)
		assert.Error(t, err, "closed once the last hold was given back")
	}
}
