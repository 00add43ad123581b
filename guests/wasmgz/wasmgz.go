// Package wasmgz decompresses the guest modules plimsoll embeds gzip-compressed.
package wasmgz

import (
	"bytes"
	"compress/gzip"
	"io"
	"sync"
)

// Lazy returns a function that gunzips gz on its first call and returns the same bytes on every
// call; callers must not modify them. A corrupt embed is a build defect, so it panics, naming it.
func Lazy(name string, gz []byte) func() []byte {
	return sync.OnceValue(func() []byte {
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			panic("embedded " + name + " is corrupt: " + err.Error())
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			panic("embedded " + name + " is corrupt: " + err.Error())
		}
		return b
	})
}
