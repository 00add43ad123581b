package apigen

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const hexDigits = "0123456789ABCDEF"

// JSString returns s as a double-quoted JavaScript string literal that contains only printable
// ASCII: quotes, backslashes, control characters, '<', '>', '&', the line separators U+2028 and
// U+2029 and every other non-ASCII character are written as escapes. So a literal can be placed
// anywhere in generated code (or inside an HTML <script> element) and never ends early, starts a
// comment or breaks a line. Bytes that are not valid UTF-8 are read as U+FFFD.
func JSString(s string) string { return jsQuoted(s, '"') }

// jsSingle is JSString with single quotes: the same escapes, but '"' is written as it is and
// '\” escaped, so JSON text inside stays short.
func jsSingle(s string) string { return jsQuoted(s, '\'') }

func jsQuoted(s string, quote rune) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteRune(quote)
	for _, r := range s { // invalid UTF-8 arrives here as utf8.RuneError (U+FFFD)
		switch r {
		case quote:
			b.WriteByte('\\')
			b.WriteRune(quote)
		case '\\':
			b.WriteString(`\\`)
		case '*':
			if quote == '\'' { // document text: never "*/", even inside a literal
				b.WriteString(`\u002A`)
			} else {
				b.WriteByte('*')
			}
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			switch {
			case r >= 0x20 && r < 0x7f && r != '<' && r != '>' && r != '&':
				b.WriteRune(r)
			case r <= 0xFFFF:
				writeU16(&b, uint16(r))
			default: // outside the BMP: a UTF-16 surrogate pair
				r -= 0x10000
				writeU16(&b, uint16(0xD800+(r>>10)))
				writeU16(&b, uint16(0xDC00+(r&0x3FF)))
			}
		}
	}
	b.WriteRune(quote)
	return b.String()
}

func writeU16(b *strings.Builder, u uint16) {
	b.WriteString(`\u`)
	b.WriteByte(hexDigits[u>>12&0xF])
	b.WriteByte(hexDigits[u>>8&0xF])
	b.WriteByte(hexDigits[u>>4&0xF])
	b.WriteByte(hexDigits[u&0xF])
}

// oneLine makes document text safe and short for one line of the tool description: every run of
// white space, control or format characters (line and paragraph separators and bidi controls
// included) becomes one space, and the result is cut to max runes, ending in an ellipsis.
func oneLine(s string, max int) string {
	var b strings.Builder
	pending := false
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			pending = b.Len() > 0
			continue
		}
		if pending {
			b.WriteByte(' ')
			pending = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if max > 0 && utf8.RuneCountInString(out) > max {
		out = strings.TrimRight(string([]rune(out)[:max-1]), " ") + "…"
	}
	return out
}

// commentSafe keeps only printable ASCII (no '*' either, so no "*/"), for text placed in a
// generated line comment (JavaScript or YAML), where a line break would end the comment.
func commentSafe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '*' {
			b.WriteByte(c)
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}
