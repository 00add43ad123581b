package host

import (
	"cmp"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// DefaultCacheMaxBytes bounds the compilation cache on disk. The JS engine's entry takes a few
// MB; each distinct .wasm tool adds about 10–20× its size.
const DefaultCacheMaxBytes = 512 << 20

func cacheBudget(max int64) int64 {
	if max <= 0 {
		return DefaultCacheMaxBytes
	}
	return max
}

// pruneCache removes the least recently modified files under dir until what is left fits in max
// bytes. wazero never evicts its file cache, and a missing entry only means compiling again, so
// this is safe while other processes use the directory. It is best effort.
func pruneCache(dir string, max int64) {
	if dir == "" {
		return
	}
	type file struct {
		path string
		size int64
		mod  int64
	}
	var files []file
	var total int64
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			files = append(files, file{path, info.Size(), info.ModTime().UnixNano()})
			total += info.Size()
		}
		return nil
	})
	if total <= max {
		return
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.mod, b.mod) })
	for _, f := range files {
		if total <= max {
			return
		}
		if os.Remove(f.path) == nil {
			total -= f.size
		}
	}
}
