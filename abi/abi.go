// Package abi is the one source of plimsoll's guest ABI: the import module and its functions'
// names and signatures, the return codes, the guest's entry points and exit codes, the envelope
// field names, the outcome names and the header that carries them. preamble/ABI.md is the human
// contract; this package is the code that every side (hostfuncs, broker, preambles, conformance
// and the guest runtimes) reads. A runtime written in another language gets these constants
// generated (CHeader), and a test fails when its copy drifts.
//
// It imports nothing of plimsoll's and builds for every GOOS, wasip1 included.
package abi

// Version is the newest ABI version these constants describe. Version 1 is host_call and
// host_response; version 2 adds the concurrent calls (host_submit, host_wait, host_result), and
// a version 1 guest runs unchanged on a version 2 host.
const Version = 2

// Module is the import module a guest calls the host through; WASIModule is the only other one
// a guest may import.
const (
	Module     = "plimsoll"
	WASIModule = "wasi_snapshot_preview1"
)

// The plimsoll module's functions: version 1's blocking call, and version 2's concurrent calls.
const (
	HostCall     = "host_call"
	HostResponse = "host_response"
	HostSubmit   = "host_submit"
	HostWait     = "host_wait"
	HostResult   = "host_result"
)

// An Extism plugin reaches the broker through one host function instead of Module's two:
// ExtismCall(request block: i64) -> response block: i64 in ExtismModule, Extism's user namespace.
// Both blocks hold the same envelopes as host_call; a response block of 0 means ErrNoRun.
const (
	ExtismModule = "extism:host/user"
	ExtismCall   = "plimsoll_call"
)

// Return codes of host_call and host_response. A non-negative return is an envelope length.
const (
	ErrBounds    int32 = -1 // a pointer/length pair lies outside guest memory
	ErrNoPending int32 = -2 // host_response: there is no pending response
	ErrTooSmall  int32 = -3 // host_response: the buffer is smaller than the pending response
	ErrNoRun     int32 = -4 // called outside a run (for example during _initialize)
	ErrInflight  int32 = -5 // host_submit: limits.max_inflight calls are in flight; wait first
	ErrUnknown   int32 = -6 // host_result: no completed, unread call has this id
)

// WaitForever as host_wait's timeout_ms waits until a call completes or the run ends.
const WaitForever uint32 = 0xffffffff

// CodeName returns the ABI name of a negative return code ("ERR_BOUNDS"), or "" for any other
// value.
func CodeName(code int32) string {
	for _, c := range Codes {
		if c.Value == code {
			return c.Name
		}
	}
	return ""
}

// Code is a named return code, as CHeader writes it.
type Code struct {
	Name  string
	Value int32
	Doc   string
}

// Codes lists the return codes in value order.
var Codes = []Code{
	{"ERR_BOUNDS", ErrBounds, "a pointer/length pair lies outside guest memory"},
	{"ERR_NO_PENDING", ErrNoPending, "host_response: there is no pending response"},
	{"ERR_TOO_SMALL", ErrTooSmall, "host_response: the buffer is smaller than the pending response"},
	{"ERR_NO_RUN", ErrNoRun, "called outside a run; nothing was recorded"},
	{"ERR_INFLIGHT", ErrInflight, "host_submit: limits.max_inflight calls are in flight; wait first"},
	{"ERR_UNKNOWN", ErrUnknown, "host_result: no completed, unread call has this id"},
}

// Entry points a guest exports: a reactor has Initialize and Run, a command has Start.
const (
	ExportInitialize = "_initialize"
	ExportRun        = "run"
	ExportStart      = "_start"
	ExportMemory     = "memory"
)

// Results of a reactor's run. Any other non-zero value is a failed tool too.
const (
	ExitOK      int32 = 0 // the tool succeeded
	ExitFailed  int32 = 1 // the tool failed; the last lines of the log say why
	ExitLimited int32 = 2 // the guest stopped the tool at one of its own limits; the log says which
)
