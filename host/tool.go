package host

import (
	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/bulkhead"
)

// Tool is what a run runs: source for an engine (JSTool, PythonTool) or a module of its own
// (WasmTool, ExtismTool). ToolFromSource builds one by its file name.
type Tool struct {
	Name string // on the audit line, and the script name in JavaScript stack traces
	src  source // the kind's own part; nil for a zero Tool

	_ [0]func() // not comparable, as when it held a module's bytes: == would panic on a module
}

// Kind names the tool's kind: KindJS, KindPython, KindWasm, KindExtism, or "" for a zero Tool.
func (t Tool) Kind() string {
	if t.src == nil {
		return ""
	}
	return t.src.kind()
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
