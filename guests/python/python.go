// Package python embeds plimsoll's Python guest: CPython 3.13 built for wasm32-wasip1 as a reactor
// (src/plimsoll.c, guest ABI v2) and its standard library as sourceless .pyc files in a zip. The
// host compiles the module once, starts the interpreter once in a template instance (which imports
// lib/_plimsoll_engine.py and with it the modules tools use), snapshots that memory, and gives
// each run a fresh instance restored from the snapshot. Each instance runs one tool.
//
// The guest sees one read-only directory, /lib (Lib): python313.zip (the standard library),
// plimsoll/_plimsoll_engine.py (the engine) and plimsoll/plimsoll.py (the client,
// preamble/python). Nothing else of the host's file system, no environment, no arguments.
//
// One run is a call of the exported run() -> i32, with on stdin one JSON object:
//
//	{"tool": "<Python source>", "input": <any JSON>, "preamble": "<extra Python>", "name": "<tool name>",
//	 "deadline_unix_ms": <wall-clock deadline in ms since the epoch, optional>}
//
// tool is the body of an async function of input and api: await works and return gives the
// result. preamble (optional) runs first in the tool's globals. name (default "tool.py") names the
// tool in tracebacks. The deadline is armed once and cannot be cleared by the tool: every loop of
// the module checks it every LoopTick iterations and ends the instance (proc_exit) once it passed.
// Unknown or duplicate fields and wrong types are refused.
//
// A preamble can also be run once, outside any run, so that the host snapshots the result and
// runs skip it: {"preload": "<key>", "preamble": "<Python>"} runs it into the scope tools will
// start from, arms no deadline (the host stops it from its yields) and writes nothing on stdout;
// it returns abi.ExitOK, or abi.ExitFailed with the error on stderr. A run of an instance restored
// from that snapshot names the key in "preloaded" (and no preamble); a key the instance does not
// hold is refused.
//
// stdout receives json.dumps of the result (compact, no NaN), and nothing else; print() and
// sys.stderr go to stderr, the run's log; when the run fails, its traceback (from the tool's
// frames) is the last thing written. run returns abi.ExitOK, abi.ExitFailed or abi.ExitLimited;
// for abi.ExitLimited the last log line is "plimsoll: limit: <which>".
//
// The module and the zip are rebuilt with `go run ./guests/internal/wasmbuild python` from the
// vendored CPython and zlib tarballs (build/build.sh); LICENSE.cpython is CPython's licence.
package python

import (
	_ "embed"
	"io/fs"
	"sync"

	"github.com/plimsoll/plimsoll/guests/wasmgz"
	pypreamble "github.com/plimsoll/plimsoll/preamble/python"
)

//go:generate go run ../../abi/cmd/abigen -c src/abi.h
//go:generate go run ../internal/wasmbuild python

//go:embed python.wasm.gz
var wasmGz []byte

//go:embed stdlib.zip.gz
var stdlibGz []byte

//go:embed lib/_plimsoll_engine.py
var engineSource []byte

// License is CPython's licence, copied from its source by the build.
//
//go:embed LICENSE.cpython
var License string

var (
	wasm   = wasmgz.Lazy("guests/python/python.wasm.gz", wasmGz)
	stdlib = wasmgz.Lazy("guests/python/stdlib.zip.gz", stdlibGz)
)

// Wasm returns the interpreter module. It is decompressed on the first call; every call returns
// the same slice, which callers must not modify.
func Wasm() []byte { return wasm() }

// Compressed returns the embedded gzip bytes of the module, for hosts that keep a copy on disk.
func Compressed() []byte { return wasmGz }

// Lib is the read-only tree the guest sees at /lib. It is built on the first call.
var Lib = sync.OnceValue(func() fs.FS {
	return memFS{
		"python313.zip":                stdlib(),
		"plimsoll/_plimsoll_engine.py": engineSource,
		"plimsoll/plimsoll.py":         []byte(pypreamble.Source),
	}
})

// MountPoint is where the guest sees Lib.
const MountPoint = "/lib"

// LoopTick is how many iterations of any loop of the module pass between two deadline checks.
const LoopTick = 10000

// Limit lines the engine writes last on its log with abi.ExitLimited, after "plimsoll: limit: ".
const (
	LimitStackPrefix = "call stack depth exceeded"
	LimitMemory      = "out of memory (the memory limit was reached)"
	LimitDeadline    = "run deadline passed (stopped by the engine)"
)
