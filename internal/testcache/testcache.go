// Package testcache names the wazero compilation cache that every test package of a run shares,
// so the JavaScript runtime compiles once per run (about 7 s) instead of once per package.
package testcache

import (
	"os"
	"path/filepath"
)

// Dir is $PLIMSOLL_CACHE_DIR when set (CI sets it), else one directory under the system's
// temporary directory.
func Dir() string {
	if d := os.Getenv("PLIMSOLL_CACHE_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "plimsoll-test-cache")
}
