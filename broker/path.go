package broker

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/plimsoll/plimsoll/profiles"
)

// Caps on the parts of a request that are not covered by the envelope's size cap.
const (
	maxPathBytes   = profiles.MaxPathBytes
	maxQueryBytes  = 8192
	maxHeaders     = 64
	maxHeaderBytes = 8192 // one value
)

// CheckPath enforces canonical paths. The broker never cleans a path: what is matched is sent.
func CheckPath(p string) error {
	bad := func(why string) error { return invalidf(fmt.Sprintf("path %s %s", quote(p), why)) }
	switch {
	case p == "":
		return invalidf("path is empty")
	case len(p) > maxPathBytes:
		return invalidf(fmt.Sprintf("path is %d bytes, over the %d-byte cap", len(p), maxPathBytes))
	case p[0] != '/':
		return bad("must start with '/'")
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c >= 0x80:
			return bad("is not ASCII")
		case c < 0x20 || c == 0x7f:
			return bad("contains a control character")
		case c == ' ':
			return bad("contains whitespace")
		case c == '\\' || c == ';' || c == '?' || c == '#':
			return bad(fmt.Sprintf("contains %q", c))
		case c == '%':
			if err := checkEscape(p, i, bad); err != nil {
				return err
			}
		}
	}
	if err := checkDecoded(p, bad); err != nil {
		return err
	}
	if p == "/" {
		return nil
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		switch seg {
		case "":
			return bad("has an empty segment ('//' or a trailing '/')")
		case ".", "..":
			return bad(fmt.Sprintf("has a %q segment", seg))
		}
	}
	return nil
}

// checkEscape refuses broken escapes and the encoded separators, dots and percent signs that let
// a path mean one thing to the matcher and another to the upstream.
func checkEscape(p string, i int, bad func(string) error) error {
	if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
		return bad("has a '%' that does not start a %XX escape")
	}
	switch strings.ToLower(p[i+1 : i+3]) {
	case "2f":
		return bad("contains an encoded '/' (%2F)")
	case "5c":
		return bad("contains an encoded '\\' (%5C)")
	case "2e":
		return bad("contains an encoded '.' (%2E)")
	case "25":
		return bad("contains an encoded '%' (%25)")
	}
	return nil
}

// checkDecoded looks at what the escapes of a path (already checked by checkEscape) decode to.
// They must decode to well-formed UTF-8: that refuses the overlong forms of '.' and '/' (%C0%AE,
// %E0%80%AE, %C0%AF) that lenient decoders still map to ASCII. And they must not encode a
// character that Unicode compatibility folding (NFKC) turns into '.', '/', '\' or '%', such as
// the fullwidth '．' (%EF%BC%8E): a server that decodes and normalises would see a path other
// than the one matched, exactly as with %2E. Nor may they encode anything but letters and
// digits (isWordRune), which "best fit" code-page conversion may fold into a delimiter.
func checkDecoded(p string, bad func(string) error) error {
	if strings.IndexByte(p, '%') < 0 {
		return nil
	}
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '%' {
			b = append(b, unhex(p[i+1])<<4|unhex(p[i+2]))
			i += 2
			continue
		}
		b = append(b, p[i])
	}
	if !utf8.Valid(b) {
		return bad("has escapes that do not decode to valid UTF-8 (an overlong or broken sequence)")
	}
	for _, r := range string(b) {
		switch {
		case r < 0x80:
		case foldsToDelimiter(r):
			return bad(fmt.Sprintf("contains an encoded U+%04X, which Unicode folding (NFKC) turns into '.', '/', '\\' or '%%'", r))
		case !isWordRune(r):
			return bad(fmt.Sprintf("contains an encoded U+%04X, which is not a letter or a digit: a server that folds characters by \"best fit\" may read it as a separator or a dot", r))
		}
	}
	return nil
}

// isWordRune is the non-ASCII a path escape may encode: letters (not modifier letters such as
// U+02BC, which best-fit tables map to quotes) and decimal digits. No best-fit or NFKC table
// maps a letter or a digit to a delimiter; symbols, punctuation, spaces, combining marks and
// format characters are all refused, as no list of the foldable ones can be complete
// (U+2215, U+2044, U+29F5, U+00A5 in Shift-JIS, U+20A9 in Korean code pages, …).
func isWordRune(r rune) bool {
	return (unicode.IsLetter(r) && !unicode.Is(unicode.Lm, r)) || unicode.Is(unicode.Nd, r)
}

// foldsToDelimiter reports the 40 characters whose NFKC form contains '.', '/', '\' or '%'
// (Unicode 15; host/security_test.go checks the list against golang.org/x/text/unicode/norm).
func foldsToDelimiter(r rune) bool {
	switch {
	case 0x2024 <= r && r <= 0x2026, // ․ ‥ …
		0x2488 <= r && r <= 0x249B: // ⒈ … ⒛
		return true
	}
	switch r {
	case 0x2100, 0x2101, 0x2105, 0x2106, // ℀ ℁ ℅ ℆
		0x33C2, 0x33C7, 0x33D8, // ㏂ ㏇ ㏘
		0xFE19, 0xFE30, 0xFE52, 0xFE68, 0xFE6A, // ︙ ︰ ﹒ ﹨ ﹪
		0xFF05, 0xFF0E, 0xFF0F, 0xFF3C, // ％ ． ／ ＼
		0x1F100: // 🄀
		return true
	}
	return false
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// checkQuery allows an already-encoded query string of printable ASCII with valid escapes.
func checkQuery(q string) error {
	if len(q) > maxQueryBytes {
		return invalidf(fmt.Sprintf("query is %d bytes, over the %d-byte cap", len(q), maxQueryBytes))
	}
	bad := func(why string) error { return invalidf(fmt.Sprintf("query %s %s", quote(q), why)) }
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c <= ' ' || c >= 0x7f:
			return bad("must be printable ASCII: percent-encode spaces, controls and non-ASCII")
		case c == '#':
			return bad("contains '#'")
		case c == '%' && (i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2])):
			return bad("has a '%' that does not start a %XX escape")
		}
	}
	return nil
}
