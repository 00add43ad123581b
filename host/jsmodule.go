package host

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"

	jsguest "github.com/plimsoll/plimsoll/guests/quickjs"
)

// jsModule returns the JavaScript runtime's wasm bytes, and whether they came from the on-disk
// copy. Decompressing the embedded gzip costs about 140 ms at every process start, so a
// decompressed copy is kept in the cache directory, named by the compressed bytes' hash and
// checked against the length gzip records. wazero validates whatever it is given.
func jsModule(cacheDir string) (bin []byte, fromCopy bool) {
	if cacheDir == "" {
		return jsguest.Wasm(), false
	}
	path := jsCopyPath(cacheDir)
	if b, err := os.ReadFile(path); err == nil && len(b) == gzipSize(jsguest.Compressed()) {
		return b, true
	}
	b := jsguest.Wasm()
	writeCopy(path, b)
	return b, false
}

func jsCopyPath(cacheDir string) string {
	sum := sha256.Sum256(jsguest.Compressed())
	return filepath.Join(cacheDir, "plimsoll-js-"+hex.EncodeToString(sum[:8])+".wasm")
}

// gzipSize is the uncompressed length a gzip stream records in its last four bytes (mod 2^32).
func gzipSize(gz []byte) int {
	if len(gz) < 4 {
		return -1
	}
	return int(binary.LittleEndian.Uint32(gz[len(gz)-4:]))
}

// writeCopy writes the copy atomically, so a concurrent process never reads half a file. It is
// best effort: without it the next start decompresses again.
func writeCopy(path string, b []byte) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plimsoll-js-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}
