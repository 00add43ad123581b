package host

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cachedPreload is the kind's cache entry for preamble: whether it is there, and with an image.
func cachedPreload(c *moduleCache, preamble string) (kept, imaged bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[sha256.Sum256([]byte(preamble))]
	if !ok {
		return false, false
	}
	<-e.ready
	return true, e.g != nil && e.g.snap != nil
}

func cachedCount(c *moduleCache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// PreparePreambles evaluates a profile's JS and Python clients before any run, so the first run
// starts from their snapshots: both images are cached with nothing run, and runs then use them.
func TestPreparePreamblesBeforeTheFirstRun(t *testing.T) {
	ps := newPetstore(t)
	js := `globalThis.fromPreamble = "js client";`
	path := filepath.Join(t.TempDir(), "pets.preamble.js")
	require.NoError(t, os.WriteFile(path, []byte(js), 0o644))
	pyLine := storeClient(t)
	p := profile(t, ps.URL, "preamble: "+path+"\n"+pyLine)
	py, err := p.ReadPreamblePython()
	require.NoError(t, err)
	rt := newRuntime(t, Options{})
	jsk, pyk := rt.kinds[KindJS].(*jsKind), rt.kinds[KindPython].(*pythonKind)

	require.NoError(t, rt.PreparePreambles(context.Background(), p))
	kept, imaged := cachedPreload(jsk.preloads, js)
	assert.True(t, kept && imaged, "the JS client is preloaded before any run")
	kept, imaged = cachedPreload(pyk.preloads, py)
	assert.True(t, kept && imaged, "the Python client is preloaded before any run")

	res := rt.Run(context.Background(), JSTool("t.js", `return fromPreamble;`), p, nil)
	require.NoError(t, res.Err, string(res.Log))
	assert.Equal(t, `"js client"`, string(res.Output))
	res = rt.Run(context.Background(), PythonTool("t.py", `return api.describe("get_pet")["fn"]`), p, nil)
	require.NoError(t, res.Err, string(res.Log))
	assert.Equal(t, `"get_pet"`, string(res.Output))
	assert.Equal(t, 1, cachedCount(jsk.preloads), "the runs used the prepared image")
	assert.Equal(t, 1, cachedCount(pyk.preloads), "the runs used the prepared image")
}

// A preamble that fails outside a run is not an error of PreparePreambles: it is kept as unfit,
// and each run evaluates it and reports the failure as it always has. A closed runtime refuses.
func TestPreparePreamblesLeavesAFailingPreambleToTheRuns(t *testing.T) {
	ps := newPetstore(t)
	js := `throw new Error("preamble broke");`
	path := filepath.Join(t.TempDir(), "pets.preamble.js")
	require.NoError(t, os.WriteFile(path, []byte(js), 0o644))
	p := profile(t, ps.URL, "preamble: "+path+"\n")
	rt := newRuntime(t, Options{})

	require.NoError(t, rt.PreparePreambles(context.Background(), p))
	kept, imaged := cachedPreload(rt.kinds[KindJS].(*jsKind).preloads, js)
	assert.True(t, kept, "tried once and kept as unfit")
	assert.False(t, imaged)
	res := rt.Run(context.Background(), JSTool("t.js", `return 1;`), p, nil)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "preamble broke")

	require.NoError(t, rt.Close(context.Background()))
	assert.ErrorIs(t, rt.PreparePreambles(context.Background(), p), ErrClosed)
}
