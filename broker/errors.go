package broker

import (
	"errors"
	"strconv"
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
