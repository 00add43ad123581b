package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/plimsoll/plimsoll/broker"
)

// Tool is what a run runs: JavaScript source for the JS runtime, or a wasip1 module of its own.
// Build one with JSTool or WasmTool.
type Tool struct {
	Name string // on the audit line, and the script name in JavaScript stack traces
	js   string
	wasm []byte
	isJS bool
}

// JSTool is a JavaScript tool: src is the body of an async function with input in scope.
func JSTool(name, src string) Tool { return Tool{Name: name, js: src, isJS: true} }

// WasmTool is a guest module built for wasip1: a reactor (_initialize and run() -> i32) or a
// command (_start). The slice is not copied; do not modify it while a run uses it.
func WasmTool(name string, wasm []byte) Tool { return Tool{Name: name, wasm: wasm} }

// Result is how a run went. Audit is always set, exactly once per run; Err is nil when
// Audit.Status is ok.
type Result struct {
	Output []byte              // what the guest wrote to stdout, up to limits.max_output_bytes
	Log    []byte              // what the guest wrote to stderr, up to limits.max_log_bytes
	Trace  []broker.TraceEntry // one entry per host call, in order
	Audit  broker.Audit
	Err    error
}

// jsRequest is the JS engine's stdin (see guests/quickjs). DeadlineUnixMs is the run's deadline
// on the wall clock, which the engine's interrupt check uses to stop a runaway tool itself.
type jsRequest struct {
	Tool           string          `json:"tool"`
	Input          json.RawMessage `json:"input"`
	Preamble       string          `json:"preamble"`
	Name           string          `json:"name"`
	DeadlineUnixMs int64           `json:"deadline_unix_ms,omitempty"`
}

var errInputNotJSON = errors.New("the input is not valid JSON")

// jsStdin builds the JS engine's stdin. Empty input is null; a zero deadline is none.
func jsStdin(t Tool, input []byte, preamble string, deadline time.Time) ([]byte, error) {
	in := json.RawMessage("null")
	if len(bytes.TrimSpace(input)) > 0 {
		if !json.Valid(input) {
			return nil, errInputNotJSON
		}
		in = input
	}
	req := jsRequest{Tool: t.js, Input: in, Preamble: preamble, Name: t.Name}
	if !deadline.IsZero() {
		req.DeadlineUnixMs = deadline.UnixMilli()
	}
	return json.Marshal(req)
}
