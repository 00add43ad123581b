package examples

import (
	_ "embed"

	"github.com/plimsoll/plimsoll/guests/wasmgz"
)

//go:generate go run ../internal/wasmbuild extism-inventory

//go:embed extism-inventory.wasm.gz
var extismInventoryGz []byte

var extismInventory = wasmgz.Lazy("guests/examples/extism-inventory.wasm.gz", extismInventoryGz)

// ExtismInventory returns the extism-inventory example (./extism-inventory), an Extism plugin
// written in Go with go-pdk on preamble/extism-go; its function is run. Every call returns the
// same slice; do not modify it.
func ExtismInventory() []byte { return extismInventory() }
