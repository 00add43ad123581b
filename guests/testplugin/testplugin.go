// Package testplugin embeds the Extism test plugin (./plugin), a Go PDK plugin that the host's
// tests and benchmarks drive with one JSON command as its input: make plimsoll_call calls, pass
// bad offsets, call Extism's http_request, flood the variable store, probe the config, grow its
// memory, spin, flood its output. The command set is documented in ./plugin.
package testplugin

import (
	_ "embed"

	"github.com/plimsoll/plimsoll/guests/wasmgz"
)

//go:generate go run ../internal/wasmbuild testplugin

//go:embed testplugin.wasm.gz
var wasmGz []byte

var wasm = wasmgz.Lazy("guests/testplugin/testplugin.wasm.gz", wasmGz)

// Wasm returns the test plugin. Every call returns the same slice; do not modify it.
func Wasm() []byte { return wasm() }
