package examples

import (
	_ "embed"

	"github.com/plimsoll/plimsoll/guests/wasmgz"
)

//go:generate go run ../internal/wasmbuild go-inventory

//go:embed go-inventory.wasm.gz
var goInventoryGz []byte

var goInventory = wasmgz.Lazy("guests/examples/go-inventory.wasm.gz", goInventoryGz)

// GoInventory returns the go-inventory example (./go-inventory), a wasip1 command built on the Go
// guest preamble. Every call returns the same slice; do not modify it.
func GoInventory() []byte { return goInventory() }
