package host

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	jsguest "github.com/plimsoll/plimsoll/guests/quickjs"
)

func TestJSModuleKeepsADecompressedCopy(t *testing.T) {
	dir := t.TempDir()

	first, fromCopy := jsModule(dir)
	require.False(t, fromCopy, "nothing on disk yet")
	second, fromCopy := jsModule(dir)

	assert.True(t, fromCopy, "the second start reads the copy")
	assert.True(t, bytes.Equal(first, second))
	assert.True(t, bytes.Equal(jsguest.Wasm(), second))

	require.NoError(t, os.WriteFile(jsCopyPath(dir), first[:1000], 0o600))
	_, fromCopy = jsModule(dir)
	assert.False(t, fromCopy, "a short copy is not trusted")

	noCache, fromCopy := jsModule("")
	assert.False(t, fromCopy)
	assert.True(t, bytes.Equal(jsguest.Wasm(), noCache))
}

// A copy of the right length but damaged content fails to compile; the runtime then compiles the
// embedded bytes and the JS runtime still works.
func TestDamagedJSCopyFallsBackToTheEmbeddedModule(t *testing.T) {
	dir := t.TempDir()
	damaged := bytes.Repeat([]byte{0xff}, len(jsguest.Wasm()))
	require.NoError(t, os.WriteFile(jsCopyPath(dir), damaged, 0o600))
	rt, err := New(context.Background(), Options{CacheDir: testCacheDir()})
	require.NoError(t, err)
	defer rt.Close(context.Background())
	rt.jsEngine().dir = dir // the copy lives apart, so other packages' runs never see the damage

	g, err := rt.jsEngine().guest()

	require.NoError(t, err)
	assert.NotNil(t, g.mod)
	_, statErr := os.Stat(jsCopyPath(dir))
	assert.True(t, os.IsNotExist(statErr), "the damaged copy is removed")
}
