// Package clienttext bounds text a client chose (an MCP client's name, a guest's error, a Host
// header) before it reaches an audit line, a trace, a log or a metric label: each string gets a
// documented byte cap, is cut on a rune boundary, and has its control and format characters
// escaped, so it can neither fill a line nor forge, hide or reorder what an operator reads.
package clienttext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The caps, in bytes of the result.
const (
	MaxName  = 128      // names and versions a client gives itself, Host values
	MaxError = 4 << 10  // an error text on an audit line
	cutMark  = "…[cut]" // ends a string that was cut
)

// Name bounds a client-chosen name to MaxName bytes.
func Name(s string) string { return Bound(s, MaxName) }

// Error bounds an error text that is written JSON-encoded (an audit line's) to MaxError bytes:
// as Bound, except that the C0 controls are left for JSON to escape (so a line break still reads
// as \n), while DEL, the C1 controls and the format characters, which JSON writes raw, are
// escaped.
func Error(s string) string { return bound(s, MaxError, escapedInJSON) }

// Bound escapes s's control and format characters (as \u{XXXX}; an invalid UTF-8 byte as
// \x{XX}) and cuts the result to at most max bytes on a rune boundary, ending it with "…[cut]"
// when it was cut. max must be at least 16. A string that needs neither comes back unchanged.
func Bound(s string, max int) string { return bound(s, max, escaped) }

func bound(s string, max int, escaped func(rune) bool) string {
	if len(s) <= max && utf8.ValidString(s) && strings.IndexFunc(s, escaped) < 0 {
		return s
	}
	var b strings.Builder
	cutAt := -1 // where to cut if the whole does not fit: the last rune boundary leaving room for the mark
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		piece := s[i : i+n]
		switch {
		case r == utf8.RuneError && n == 1:
			piece = fmt.Sprintf(`\x{%02X}`, s[i])
		case escaped(r):
			piece = fmt.Sprintf(`\u{%04X}`, r)
		}
		if cutAt < 0 && b.Len()+len(piece) > max-len(cutMark) {
			cutAt = b.Len()
		}
		if b.Len()+len(piece) > max {
			return b.String()[:cutAt] + cutMark
		}
		b.WriteString(piece)
		i += n
	}
	return b.String()
}

// escaped are the runes shown as \u{XXXX}: controls (C0, DEL, C1), format characters (bidi
// overrides, zero-width joiners) and the line and paragraph separators.
func escaped(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// escapedInJSON are the runes of escaped that encoding/json writes raw: all but C0.
func escapedInJSON(r rune) bool { return r >= 0x20 && escaped(r) }

// Shrink halves *s (with Bound, so it stays clean and says it was cut) until fits holds or *s
// is empty: for a record whose encoded size must stay under a cap whatever escaping adds.
func Shrink(s *string, fits func() bool) {
	for *s != "" && !fits() {
		if len(*s) <= 2*len(cutMark) {
			*s = ""
			return
		}
		*s = Bound(*s, len(*s)/2)
	}
}
