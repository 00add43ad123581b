package host

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The compilation cache on disk is bounded: the oldest entries go first.
func TestPruneCacheRemovesTheOldestFirst(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "wazero-v1")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range []string{"old", "middle", "new"} {
		p := filepath.Join(sub, name)
		require.NoError(t, os.WriteFile(p, make([]byte, 100), 0o644))
		require.NoError(t, os.Chtimes(p, base, base.Add(time.Duration(i)*time.Hour)))
	}
	pruneCache(dir, 250)
	_, err := os.Stat(filepath.Join(sub, "old"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	for _, kept := range []string{"middle", "new"} {
		_, err := os.Stat(filepath.Join(sub, kept))
		assert.NoError(t, err, kept)
	}
	pruneCache(dir, 1000) // under the bound: nothing goes
	_, err = os.Stat(filepath.Join(sub, "middle"))
	assert.NoError(t, err)
	pruneCache("", 0) // memory only: nothing to do
}
