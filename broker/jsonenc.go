package broker

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// The response envelope and the broker's own answers are written by hand: encoding/json's
// reflection and sorted-map walk were a third of the host's share of a denied call (RATIONALE,
// "Performance II: the host's share of a call"). The bytes are those encoding/json writes for
// the same values; FuzzEncodeResponse holds the two to that.

const hexDigits = "0123456789abcdef"

// appendEnvelope appends the envelope of a response whose body is given as text or as base64.
func appendEnvelope[T string | []byte](dst []byte, status int, headers map[string][]string, key string, body T) []byte {
	dst = append(dst, `{"status":`...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, `,"headers":{`...)
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	slices.Sort(names) // encoding/json's order for map keys
	for i, name := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, name, false)
		dst = append(dst, ':')
		dst = appendStrings(dst, headers[name])
	}
	dst = append(dst, `},"`...)
	dst = append(dst, key...)
	dst = append(dst, `":`...)
	dst = appendJSONString(dst, body, false)
	return append(dst, '}')
}

// appendStrings appends a JSON array of strings; null for a nil slice, as encoding/json does.
func appendStrings(dst []byte, vs []string) []byte {
	if vs == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, v, false)
	}
	return append(dst, ']')
}

// appendJSONString appends s as a JSON string, escaped exactly as encoding/json escapes it
// (with SetEscapeHTML(escapeHTML)): invalid UTF-8 becomes \ufffd, U+2028 and U+2029 are escaped.
func appendJSONString[T string | []byte](dst []byte, s T, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && !(escapeHTML && (b == '<' || b == '>' || b == '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(string(s[i : i+min(len(s)-i, utf8.UTFMax)])) // a few bytes: no copy escapes
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
