// Package jsguest embeds plimsoll's JavaScript guest runtime: goja built as a wasip1 reactor
// from ./runtime (guest ABI v1, preamble/ABI.md). The host compiles Wasm once and instantiates it
// per run; instantiation runs _initialize, which creates the interpreter and loads the generic
// preamble, so pre-initialised instances can wait in a pool. Each instance runs one tool.
//
// One run is a call of the exported run() -> i32, with on stdin one JSON object:
//
//	{"tool": "<JS source>", "input": <any JSON>, "preamble": "<extra JS>", "name": "<tool name>"}
//
// tool is required and is the body of an async function with input in scope. input defaults to
// null. preamble (optional) is evaluated after the generic preamble and before the tool, in the
// same global scope. name (default "tool.js") names the tool in stack traces. Unknown or
// duplicate fields, wrong types and trailing data are refused.
//
// stdout receives JSON.stringify of the tool's resolved value (undefined becomes null), with no
// trailing newline, and nothing else. stderr receives console output and, when the run fails,
// the reason as the last thing written. run returns ExitOK, ExitFailed or ExitLimited.
//
// The JavaScript API tools see is documented in preamble/js/README.md.
package jsguest

import (
	_ "embed"

	"github.com/plimsoll/plimsoll/guests/wasmgz"
)

//go:generate go run ../internal/wasmbuild js

//go:embed runtime.wasm.gz
var wasmGz []byte

var wasm = wasmgz.Lazy("guests/js/runtime.wasm.gz", wasmGz)

// Wasm returns the JavaScript guest module. It is decompressed on the first call; every call
// returns the same slice, which callers must not modify.
func Wasm() []byte {
	return wasm()
}

// Compressed returns the embedded gzip bytes, for hosts that keep a decompressed copy on disk.
func Compressed() []byte { return wasmGz }

// Run results of the module's exported run function.
const (
	ExitOK      = 0 // the tool's result is on stdout
	ExitFailed  = 1 // the tool failed; the reason is the last thing on stderr
	ExitLimited = 2 // a guest-side limit was hit (call-stack depth); stderr says which
)
