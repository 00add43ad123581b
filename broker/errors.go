package broker

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalid is matched (errors.Is) by every *InvalidError.
var ErrInvalid = errors.New("invalid request")

// InvalidError says what was wrong with a guest request. Its Reason is safe to show the guest and
// to write to the trace: guest-supplied text in it is quoted and truncated.
type InvalidError struct {
	Reason string
}

func (e *InvalidError) Error() string        { return "invalid request: " + e.Reason }
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(reason string) error { return &InvalidError{Reason: reason} }

// maxQuoted caps how much guest text a reason repeats, so one call cannot bloat the trace.
const maxQuoted = 120

// quote renders guest-supplied text as a printable ASCII Go string literal, truncated. Control
// characters and escapes therefore cannot forge trace or audit lines.
func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.QuoteToASCII(s[:maxQuoted]) + "…"
	}
	return strconv.QuoteToASCII(s)
}

// safeMethod and safePath keep undecodable or refused input readable in the trace.
func safeMethod(m string) string {
	if allowedMethods[m] {
		return m
	}
	return trimQuote(m)
}

func safePath(p string) string {
	if CheckPath(p) == nil {
		return p
	}
	return trimQuote(p)
}

func trimQuote(s string) string {
	if s == "" {
		return ""
	}
	q := strings.TrimPrefix(quote(s), `"`)
	if cut, ok := strings.CutSuffix(q, `"…`); ok {
		return cut + "…"
	}
	return strings.TrimSuffix(q, `"`)
}
