package plimsoll

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/plimsoll/plimsoll/abi"
)

// Outcome is what the broker did with a call, as the trace records it.
type Outcome string

// The outcomes of guest ABI v1. A Response always comes from a Forwarded call; the others arrive
// as an *OutcomeError.
const (
	Forwarded  Outcome = abi.Forwarded
	Shed       Outcome = abi.Shed
	Denied     Outcome = abi.Denied
	OverBudget Outcome = abi.OverBudget
	Invalid    Outcome = abi.Invalid
	Failed     Outcome = abi.Failed
)

// OutcomeHeader is the header on the broker's own answers that names their outcome.
const OutcomeHeader = abi.OutcomeHeader

// Sentinels matched by *OutcomeError with errors.Is.
var (
	ErrShed       = errors.New("plimsoll: shed: the API is overloaded and the call was not forwarded")
	ErrDenied     = errors.New("plimsoll: denied: the grant does not allow this method and route")
	ErrOverBudget = errors.New("plimsoll: over budget: the run's forwarded-call budget is spent")
	ErrInvalid    = errors.New("plimsoll: invalid: the broker refused the request as malformed")
	ErrFailed     = errors.New("plimsoll: failed: the call was forwarded but no usable response came back")
)

// ErrNoHost is returned by every call made outside a plimsoll guest (GOOS other than wasip1).
var ErrNoHost = errors.New("plimsoll: not running as a plimsoll guest (build with GOOS=wasip1 GOARCH=wasm)")

var sentinels = map[Outcome]error{
	Shed: ErrShed, Denied: ErrDenied, OverBudget: ErrOverBudget, Invalid: ErrInvalid, Failed: ErrFailed,
}

// OutcomeError is a call the broker answered itself instead of the upstream.
type OutcomeError struct {
	Method, Path string
	Outcome      Outcome
	Status       int           // what the broker answered: 503, 403, 429, 400, 502 or 504
	Reason       string        // the broker's reason, from the answer's JSON body
	RetryAfter   time.Duration // from Retry-After; set on shed answers, 0 when absent
	Response     *Response     // the broker's answer as it came
}

func (e *OutcomeError) Error() string {
	var b strings.Builder
	b.WriteString("plimsoll: ")
	if e.Method != "" || e.Path != "" {
		b.WriteString(e.Method + " " + e.Path + ": ")
	}
	b.WriteString(string(e.Outcome) + " (" + strconv.Itoa(e.Status) + ")")
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	if e.RetryAfter > 0 {
		b.WriteString("; retry after " + e.RetryAfter.String())
	}
	return b.String()
}

// Is matches the sentinel of the error's outcome.
func (e *OutcomeError) Is(target error) bool {
	s, ok := sentinels[e.Outcome]
	return ok && s == target
}

// outcomeOf turns a broker's own answer into an *OutcomeError; a forwarded response gives nil.
func outcomeOf(req *Request, resp *Response) *OutcomeError {
	o := resp.Header.Get(OutcomeHeader)
	if o == "" {
		return nil
	}
	e := &OutcomeError{Method: req.Method, Path: req.Path, Outcome: Outcome(o), Status: resp.Status, Response: resp}
	var body struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(resp.Body, &body) == nil {
		e.Reason = body.Reason
	}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
	return e
}

// parseRetryAfter reads delta-seconds, the form the broker sends. Anything else is 0.
func parseRetryAfter(v string) time.Duration {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0
	}
	return time.Duration(n) * time.Second
}

// HostError is a host_call or host_response that returned a negative ABI code, or a length the
// ABI does not allow. It means a bug in the preamble or the host, not a refused call: the broker
// answers refusals with an envelope.
type HostError struct {
	Func string // "host_call" or "host_response"
	Code int32
}

func (e *HostError) Error() string {
	name := ""
	if n := abi.CodeName(e.Code); n != "" {
		name = " (" + n + ")"
	}
	return fmt.Sprintf("plimsoll: %s returned %d%s", e.Func, e.Code, name)
}
