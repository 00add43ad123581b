// Package plimsoll is the preamble for Extism plugins written in Go with
// github.com/extism/go-pdk: the same client as the Go guest preamble (preamble/go), whose
// request and response envelopes it reuses, carried by the host function plimsoll_call
// (extism:host/user) instead of the plimsoll imports. Build a plugin with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -tags plimsoll_extism -o plugin.wasm .
//
// The tag leaves preamble/go's own imports out of the plugin; without it the build fails here,
// naming the tag. A plugin exports its function with //go:wasmexport (plimsoll calls run unless
// told another with --function), reads its input with pdk.Input and writes its output with
// pdk.Output:
//
//	//go:wasmexport run
//	func run() int32 {
//		resp, err := plimsoll.Get("/items", plimsoll.WithQuery("tag", "red"))
//		if err != nil {
//			pdk.SetError(err) // denied, shed, over budget, invalid, failed: an *OutcomeError
//			return 1
//		}
//		pdk.Output(resp.Body)
//		return 0
//	}
//
// Extism's own HTTP API (pdk.NewHTTPRequest) is not served: a plugin that calls it fails, and
// nothing is sent. Outcomes, errors and what is sent are as preamble/go documents.
package plimsoll

import (
	"github.com/plimsoll/plimsoll/abi"
	goplimsoll "github.com/plimsoll/plimsoll/preamble/go"
)

// The types of preamble/go.
type (
	Request      = goplimsoll.Request
	Response     = goplimsoll.Response
	Option       = goplimsoll.Option
	Header       = goplimsoll.Header
	Outcome      = goplimsoll.Outcome
	OutcomeError = goplimsoll.OutcomeError
	HostError    = goplimsoll.HostError
)

// The outcomes of guest ABI v1.
const (
	Forwarded     = goplimsoll.Forwarded
	Shed          = goplimsoll.Shed
	Denied        = goplimsoll.Denied
	OverBudget    = goplimsoll.OverBudget
	Invalid       = goplimsoll.Invalid
	Failed        = goplimsoll.Failed
	OutcomeHeader = goplimsoll.OutcomeHeader
)

// Sentinels matched by *OutcomeError with errors.Is.
var (
	ErrShed       = goplimsoll.ErrShed
	ErrDenied     = goplimsoll.ErrDenied
	ErrOverBudget = goplimsoll.ErrOverBudget
	ErrInvalid    = goplimsoll.ErrInvalid
	ErrFailed     = goplimsoll.ErrFailed
	ErrNoHost     = goplimsoll.ErrNoHost
)

// Calls, as preamble/go's.
var (
	Get                  = goplimsoll.Get
	Delete               = goplimsoll.Delete
	Post                 = goplimsoll.Post
	Put                  = goplimsoll.Put
	Patch                = goplimsoll.Patch
	Do                   = goplimsoll.Do
	NewRequest           = goplimsoll.NewRequest
	WithQuery            = goplimsoll.WithQuery
	WithRawQuery         = goplimsoll.WithRawQuery
	WithHeader           = goplimsoll.WithHeader
	EscapeQueryComponent = goplimsoll.EscapeQueryComponent
	CanonicalHeaderKey   = goplimsoll.CanonicalHeaderKey
)

// CallFunc names the host function the envelopes travel through, for HostError.Func.
const CallFunc = abi.ExtismCall
