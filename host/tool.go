package host

import (
	"crypto/sha256"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/bulkhead"
)

// Tool is what a run runs: JavaScript source for the JS engine, or a wasip1 module of its own.
// Build one with JSTool or WasmTool.
type Tool struct {
	Name string // on the audit line, and the script name in JavaScript stack traces
	kind kindID
	js   string    // the source, for kindJS and kindPython
	wasm []byte    // the module, for kindWasm and kindExtism
	fn   string    // the function an Extism plugin's run calls; "" for ExtismFunction
	sum  *[32]byte // the module's content hash, taken once (3 MB of Go plugin: ~2 ms a run)
}

// JSTool is a JavaScript tool: src is the body of an async function with input in scope.
func JSTool(name, src string) Tool { return Tool{Name: name, kind: kindJS, js: src} }

// WasmTool is a guest module built for wasip1: a reactor (_initialize and run() -> i32) or a
// command (_start). The slice is not copied; do not modify it once the tool is built.
// A module that imports Extism's host modules is an Extism plugin: it runs as ExtismTool(name,
// wasm, "") does.
func WasmTool(name string, wasm []byte) Tool {
	if isExtismPlugin(wasm) {
		return ExtismTool(name, wasm, "")
	}
	sum := sha256.Sum256(wasm) // once, not per run: a Go tool is MBs (a quarter of its run start)
	return Tool{Name: name, kind: kindWasm, wasm: wasm, sum: &sum}
}

// ExtismTool is an Extism plugin built with any PDK: the run calls its export function (""
// means ExtismFunction, "run") with the tool's input as the plugin's input, and the plugin's
// output is the tool's output. Calls go through plimsoll_call (preamble/extism-go).
// The slice is not copied; do not modify it once the tool is built.
func ExtismTool(name string, wasm []byte, function string) Tool {
	sum := sha256.Sum256(wasm)
	return Tool{Name: name, kind: kindExtism, wasm: wasm, fn: function, sum: &sum}
}

// The kinds of tool, as Tool.Kind names them.
const (
	KindJS     = "js"
	KindWasm   = "wasm"
	KindExtism = "extism"
)

// Kind names the tool's kind: KindJS, KindWasm, KindExtism, KindPython, or "" for a zero Tool.
func (t Tool) Kind() string {
	return map[kindID]string{kindJS: KindJS, kindWasm: KindWasm, kindExtism: KindExtism, kindPython: KindPython}[t.kind]
}

// WithFunction is an Extism tool calling function instead; any other tool is returned as it is.
func (t Tool) WithFunction(function string) Tool {
	if t.kind == kindExtism {
		t.fn = function
	}
	return t
}

// AsExtism is a module tool run as an Extism plugin calling function ("" means ExtismFunction),
// whatever it imports; any other tool is returned as it is.
func (t Tool) AsExtism(function string) Tool {
	if t.kind != kindWasm && t.kind != kindExtism {
		return t
	}
	return ExtismTool(t.Name, t.wasm, function)
}

// Result is how a run went. Audit is always set, exactly once per run; Err is nil when
// Audit.Status is ok.
type Result struct {
	Output []byte              // what the guest wrote to stdout, up to limits.max_output_bytes
	Log    []byte              // what the guest wrote to stderr, up to limits.max_log_bytes
	Trace  []broker.TraceEntry // one entry per host call, in order
	// BreakerEvents are the run's probes and breaker transitions, recorded beside the trace.
	BreakerEvents []broker.BreakerEvent
	Audit         broker.Audit
	Err           error
}

// RunOptions are a run's optional settings, for Runtime.RunWith. The zero value is Run's.
type RunOptions struct {
	// RunID names the run on its audit line; "" means a fresh random id. A caller that records
	// the run before it starts (a daemon's crash journal) picks it.
	RunID string
	// OnCall, when set, is called with each trace entry as the broker records it, possibly from
	// several goroutines at once. It must not block for long: the guest waits for it.
	OnCall func(broker.TraceEntry)
	// OnLog, when set, is called with each chunk the guest writes to stderr and the log keeps
	// (chunks are not split into lines). The slice is only valid during the call.
	OnLog func([]byte)
	// ForcedOpen, when set, is the operator's forced-open flag for the run's profile, read by
	// the broker at every call's admission (broker.Config.ForcedOpen).
	ForcedOpen func() (reason string, open bool)
	// Quota, when set, is the client's calls quota, asked before each call is forwarded
	// (broker.Config.Quota).
	Quota func() error
	// OnStart, when set, is called once the run's broker exists and before the guest starts,
	// with a read-only snapshot of the run (broker.Broker.State), safe to call from any
	// goroutine until and after the run ends. A run refused before it had a broker never
	// calls it.
	OnStart func(state func() broker.State)
	// Criticality is the run's tier at a profile's concurrency limit (issue 26): when the API
	// is at its limit, a more critical call displaces a less critical one from the queue and
	// waits longer. The zero value is bulkhead.Normal.
	Criticality bulkhead.Tier
	// ForcedRoute, when set, is the operator's forced-open flag per granted route pattern
	// (broker.Config.ForcedRoute).
	ForcedRoute func(route string) (reason string, open bool)
	// Approver, when set, asks a person about calls under the profile's approvals routes
	// (broker.Config.Approver); without one, such calls are refused.
	Approver broker.Approver

	// Watch, when set, is called right after OnStart with a read-only view of the run: its state,
	// its trace and its breaker events so far (an operator's live timeline).
	Watch func(LiveRun)
	// TraceParent is the W3C traceparent the run's forwarded calls carry when the profile has
	// propagate_trace (broker.Config.TraceParent).
	TraceParent string
}

// LiveRun is a read-only view of a run as it goes; every method is safe from any goroutine,
// during and after the run.
type LiveRun interface {
	State() broker.State
	Trace() []broker.TraceEntry
	BreakerEvents() []broker.BreakerEvent
}

// contentHash is the module's sha256, taken when the tool was built (a Tool built as a literal
// hashes now).
func (t Tool) contentHash() [32]byte {
	if t.sum != nil {
		return *t.sum
	}
	return sha256.Sum256(t.wasm)
}
