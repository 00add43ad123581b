// Package quickjs embeds plimsoll's JavaScript engine guest: QuickJS-ng built as a wasip1
// reactor from reactor.c and engine.js (guest ABI v2, preamble/ABI.md), with the generic
// preamble (preamble/js/preamble.js) compiled in. The host compiles the module once and
// instantiates it per run; instantiation runs _initialize, which creates the engine, adds the web
// globals and evaluates the generic preamble, so pre-initialised instances (or a snapshot of one)
// can wait in a pool. Each instance runs one tool.
//
// One run is a call of the exported run() -> i32, with on stdin one JSON object:
//
//	{"tool": "<JS source>", "input": <any JSON>, "preamble": "<extra JS>", "name": "<tool name>",
//	 "deadline_unix_ms": <wall-clock deadline in ms since the epoch, optional>}
//
// tool is required and is the body of an async function with input in scope. input defaults to
// null. preamble (optional) is evaluated after the generic preamble and before the tool, in the
// same global scope. name (default "tool.js") names the tool in stack traces. deadline_unix_ms
// lets the engine stop a runaway tool itself (its interrupt handler checks the clock) before the
// host closes the module. Unknown or duplicate fields, wrong types and trailing data are refused.
//
// stdout receives JSON.stringify of the tool's resolved value (undefined becomes null), with no
// trailing newline, and nothing else. stderr receives console output and, when the run fails,
// the reason as the last thing written. run returns abi.ExitOK, abi.ExitFailed or abi.ExitLimited; for
// abi.ExitLimited the last log line is "plimsoll: limit: <which>".
//
// The module is rebuilt with `go run ./guests/internal/wasmbuild -quickjs-tarball PATH quickjs`
// from the pinned QuickJS-ng source (github.com/quickjs-ng/quickjs at commit 05b2db95d9b8,
// `git archive --format=tar.gz --prefix=quickjs-ng/`, sha256 6e8e9cd59f53…; the build checks it);
// LICENSE.quickjs-ng is the engine's licence, copied from that source by the build.
package quickjs

import (
	_ "embed"

	"github.com/plimsoll/plimsoll/guests/wasmgz"
)

//go:generate go run ../../abi/cmd/abigen -c src/abi.h
//go:generate go run ../internal/wasmbuild quickjs

//go:embed engine.wasm.gz
var wasmGz []byte

//go:embed LICENSE.quickjs-ng
var License string

var wasm = wasmgz.Lazy("guests/quickjs/engine.wasm.gz", wasmGz)

// Wasm returns the engine module. It is decompressed on the first call; every call returns the
// same slice, which callers must not modify.
func Wasm() []byte {
	return wasm()
}

// Compressed returns the embedded gzip bytes, for hosts that keep a decompressed copy on disk.
func Compressed() []byte { return wasmGz }

// Run results of the module's exported run function: abi.ExitOK (the tool's result is on
// stdout), abi.ExitFailed (the reason is the last thing on stderr), abi.ExitLimited (a guest-side
// limit was hit: stack depth, memory, the deadline; stderr says which).

// Limit lines the engine writes last on its log with ExitLimited, after "plimsoll: limit: ".
const (
	LimitStackPrefix = "call stack depth exceeded"
	LimitMemory      = "out of memory (the memory limit was reached)"
	LimitDeadline    = "run deadline passed (stopped by the engine)"
)
