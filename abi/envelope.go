package abi

// Field names of the request envelope (guest → host).
const (
	FieldMethod     = "method"
	FieldPath       = "path"
	FieldQuery      = "query"
	FieldHeaders    = "headers"
	FieldBody       = "body"
	FieldBodyBase64 = "body_base64"
)

// FieldStatus is the response envelope's status; it also has FieldHeaders and one of FieldBody
// and FieldBodyBase64.
const FieldStatus = "status"

// Outcome names: what the broker did with a call, as the trace records it and the outcome header
// says on the broker's own answers.
const (
	Forwarded  = "forwarded"
	Shed       = "shed"
	Denied     = "denied"
	OverBudget = "over_budget"
	Invalid    = "invalid"
	Failed     = "failed"
)

// Outcomes lists every outcome, forwarded first.
var Outcomes = []string{Forwarded, Shed, Denied, OverBudget, Invalid, Failed}

// OutcomeHeader is the header on the broker's own answers that names their outcome. A forwarded
// answer never carries it.
const OutcomeHeader = "Plimsoll-Outcome"
