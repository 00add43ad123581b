package examples

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"sync"
)

//go:generate go run ../internal/wasmbuild go-inventory

//go:embed go-inventory.wasm.gz
var goInventoryGz []byte

var goInventory = sync.OnceValue(func() []byte {
	zr, err := gzip.NewReader(bytes.NewReader(goInventoryGz))
	if err != nil {
		panic("examples: embedded go-inventory.wasm.gz is corrupt: " + err.Error())
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		panic("examples: embedded go-inventory.wasm.gz is corrupt: " + err.Error())
	}
	return b
})

// GoInventory returns the go-inventory example (./go-inventory), a wasip1 command built on the Go
// guest preamble. Every call returns the same slice; do not modify it.
func GoInventory() []byte { return goInventory() }
