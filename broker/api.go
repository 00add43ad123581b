// Package broker makes every API call a guest asks for: it validates the request, checks the
// run's grant, consults the run's circuit breaker, enforces the budget, injects the credential,
// forwards, and records a trace entry and counters. One Broker serves one run.
package broker

import (
	"net/http"
	"time"

	"github.com/plimsoll/plimsoll/abi"
	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/profiles"
)

// Request is one guest call, decoded from the ABI's request envelope.
type Request struct {
	Method  string
	Path    string
	Query   string
	Headers http.Header
	Body    []byte
}

// Response is what the guest sees.
type Response struct {
	Status  int
	Headers http.Header
	Body    []byte
}

// Outcome is what happened to one call.
type Outcome string

const (
	Forwarded  Outcome = abi.Forwarded
	Shed       Outcome = abi.Shed
	Denied     Outcome = abi.Denied
	OverBudget Outcome = abi.OverBudget
	Invalid    Outcome = abi.Invalid
	Failed     Outcome = abi.Failed
)

// Config builds a Broker.
type Config struct {
	Profile   *profiles.Profile
	Secret    profiles.Secret   // resolved credential; see profiles.Profile.ResolveSecret
	Transport http.RoundTripper // upstream transport; nil means a fresh private http.Transport
	Now       func() time.Time  // clock; nil means time.Now
	RunID     string
	Tool      string
	// OnRecord, when set, is called with each trace entry once it is recorded, outside the
	// broker's lock, possibly from several goroutines at once.
	OnRecord func(TraceEntry)
	// ForcedOpen, when set, is read at every call's admission, before the breaker: while it
	// says open, the call is shed (503 + Retry-After, outcome shed) with reason "forced open by
	// the operator: " and its reason, no probe is sent and the budget is not charged. The
	// daemon owns the flag and passes it in; the broker never reaches up for it. It must be
	// cheap and safe for concurrent use.
	ForcedOpen func() (reason string, open bool)
	// Limits, when set, is the process's registry of per-API concurrency limits: a call of a
	// profile with a concurrency block waits there for a slot after the breaker and the budget
	// (see limit.go). Criticality is the run's tier there; the zero value is Normal.
	Limits      *Limits
	Criticality bulkhead.Tier
	// ForcedRoute, when set, is the operator's forced-open flag per granted route pattern, read
	// after the grant and before the breaker: while it says open for the call's route, the call
	// is shed as with ForcedOpen, with reason "forced open by the operator on route ROUTE: ".
	ForcedRoute func(route string) (reason string, open bool)
	// Approver, when set, is asked about every call under the profile's approvals routes; with
	// none, such calls are refused (403 approval_unavailable), never forwarded.
	Approver Approver
	// Quota, when set, is asked once for each call the breaker and the run's budget let go on,
	// before it is forwarded: an error refuses the call (429, outcome over_budget, the error's
	// text as reason, and Retry-After when the error has a RetryAfter() int method). The
	// daemon's per-client calls quota is one (server/quota). It is asked under the run's lock, so
	// it must be cheap or bounded: a fleet replica may wait up to a second to reserve units.
	Quota func() error

	// TraceParent is the W3C traceparent that forwarded calls carry upstream when the profile
	// has propagate_trace (never probes); "" for none.
	TraceParent string
}

// Values of TraceEntry.Probe.
const (
	ProbeOK       = "ok"
	ProbeNotReady = "not_ready"
)

// Status is how a run ended, as written on the audit line.
type Status string

const (
	StatusOK      Status = "ok"
	StatusError   Status = "error"   // the tool failed: threw, exited non-zero, bad input
	StatusTimeout Status = "timeout" // the run deadline passed
	StatusLimit   Status = "limit"   // a resource limit was hit: memory, output, log, host calls, stack
	// StatusInterrupted is a run the daemon stopped (killed, crashed) before it could write the
	// run's own line; the next start writes it from the journal.
	StatusInterrupted Status = "interrupted"
)

// TraceEntry is one guest call in the run's call trace (one JSON line each).
type TraceEntry struct {
	Seq            int     `json:"seq"` // submission order, from 1
	TMs            int64   `json:"t_ms"`
	Method         string  `json:"method"`
	Path           string  `json:"path"`
	Route          string  `json:"route"`
	Outcome        Outcome `json:"outcome"`
	Status         int     `json:"status"`
	UpstreamStatus int     `json:"upstream_status"`
	LatencyMs      float64 `json:"latency_ms"`
	Reason         string  `json:"reason"`
	// Probe is set on a call that was picked to probe health_check: "ok" (the breaker closed and
	// the call went on) or "not_ready" (the call was shed). The probe itself is never an entry.
	Probe string `json:"probe,omitempty"`
	// QueueMs is how long the call waited for a slot of its API's concurrency limit; 0 (and not
	// written) when it did not wait.
	QueueMs float64 `json:"queue_ms,omitempty"`
	// Approval is set on a call under the profile's approvals routes.
	Approval *ApprovalTrace `json:"approval,omitempty"`
}

// Counters are the run's call tallies.
type Counters struct {
	HostCalls    int `json:"host_calls"`
	Forwarded    int `json:"host_calls_forwarded"`
	Shed         int `json:"host_calls_shed"`
	Denied       int `json:"host_calls_denied"`
	OverBudget   int `json:"host_calls_over_budget"`
	Invalid      int `json:"host_calls_invalid"`
	Failed       int `json:"host_calls_failed"`
	Probes       int `json:"probes"`
	ProbesOK     int `json:"probes_ok"`
	BreakerOpens int `json:"breaker_opens"`
}

// Audit is the run's one audit line.
type Audit struct {
	RunID   string `json:"run_id"`
	Profile string `json:"profile"`
	Tool    string `json:"tool"`
	Status  Status `json:"status"`
	Error   string `json:"error"`
	Counters
	BudgetCalls int   `json:"budget_calls"`
	DurationMs  int64 `json:"duration_ms"`
	// ForcedOpen is the operator's reason when at least one of the run's calls was shed because
	// its profile was forced open (the last such reason); "" otherwise, and then not written.
	ForcedOpen string `json:"forced_open,omitempty"`
	// Client is who asked for the run: the daemon's clients-file name ("anonymous" without one);
	// "" (not written) from the CLI and MCP over stdio, which have no clients.
	Client string `json:"client,omitempty"`
	// MCPClient is the name an MCP client gave itself in initialize (a label, not an identity),
	// for a run asked over MCP; "" (not written) otherwise.
	MCPClient string `json:"mcp_client,omitempty"`
	// Approvals counts the run's approvals; set only when its profile has an approvals block.
	Approvals *ApprovalCounts `json:"approvals,omitempty"`
}
