package broker

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"unicode/utf8"
)

// Redacted replaces the secret wherever an upstream echoes it back.
const Redacted = "[redacted]"

// A redactor finds one run's secret in what an upstream sends back, in the encodings an honest
// echo puts it in, and replaces each occurrence with Redacted:
//   - character by character, each character raw or escaped, in any mix: percent-encoded (either
//     hex case, '+' for a space), JSON and JavaScript escapes (\/, \uXXXX with surrogate pairs,
//     \xHH), Go's quoting, and HTML character references (&#43; &#x2B; &amp;);
//   - base64, standard and URL-safe, at each of the three alignments the secret can have inside a
//     longer encoded text, padded or not; and hex, in either case.
//
// What it cannot promise against an upstream that means to leak is in SECURITY.md.
type redactor struct {
	runes []rune
	enc   [][]byte  // each rune's UTF-8 bytes
	fixed [][]byte  // base64 and hex forms, searched as they are
	start [256]bool // the bytes an occurrence can begin with
	fold  [256]bool // the same, ignoring ASCII case (header names)
}

// minFixed is the shortest base64 or hex form searched for: a shorter one would match by chance.
const minFixed = 8

func newRedactor(secret string) *redactor {
	x := &redactor{runes: []rune(secret)}
	for _, r := range x.runes {
		x.enc = append(x.enc, utf8.AppendRune(nil, r))
	}
	for _, c := range []byte{'%', '\\', '&', x.enc[0][0]} {
		x.start[c] = true
	}
	if x.runes[0] == ' ' {
		x.start['+'] = true
	}
	x.fold = x.start
	x.fold[lowerASCII(x.enc[0][0])], x.fold[upperASCII(x.enc[0][0])] = true, true
	x.fixed = fixedForms([]byte(secret))
	return x
}

// fixedForms are the secret's base64 and hex forms. Inside a longer base64 text the secret starts
// at bit 0, 8 or 16 of a 24-bit group; the characters that hold only the secret's bits are the
// same whatever surrounds it, so each alignment gives one form to search for. The one or two
// characters at either end that mix in neighbouring bits are left: they hold at most 6 bits of
// the secret.
func fixedForms(secret []byte) [][]byte {
	var forms [][]byte
	add := func(f []byte) {
		if len(f) >= minFixed && !containsForm(forms, f) {
			forms = append(forms, f)
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for a := range 3 {
			text := enc.EncodeToString(append(make([]byte, a), secret...))
			from, to := (8*a+5)/6, 8*(a+len(secret))/6
			add([]byte(text[from:to]))
		}
	}
	h := hex.EncodeToString(secret)
	add([]byte(h))
	add(bytes.ToUpper([]byte(h)))
	return forms
}

func containsForm(forms [][]byte, f []byte) bool {
	for _, g := range forms {
		if bytes.Equal(f, g) {
			return true
		}
	}
	return false
}

// redact returns b with every occurrence replaced; b itself when there is none. fold matches
// ASCII letters in either case, as header names need.
func (x *redactor) redact(b []byte, fold bool) []byte {
	start := &x.start
	if fold {
		start = &x.fold
	}
	var out []byte
	last := 0
	for i := 0; i < len(b); i++ {
		if !start[b[i]] {
			continue
		}
		if end, ok := x.matchAt(b, i, fold); ok {
			out = append(append(out, b[last:i]...), Redacted...)
			last, i = end, end-1
		}
	}
	if out != nil {
		b = append(out, b[last:]...)
	}
	for _, f := range x.fixed {
		b = replaceForm(b, f, fold)
	}
	return b
}

func replaceForm(b, form []byte, fold bool) []byte {
	if !fold {
		if !bytes.Contains(b, form) {
			return b
		}
		return bytes.ReplaceAll(b, form, []byte(Redacted))
	}
	i := indexFoldASCII(string(b), form)
	if i < 0 {
		return b
	}
	var out []byte
	for ; i >= 0; i = indexFoldASCII(string(b), form) {
		out = append(append(out, b[:i]...), Redacted...)
		b = b[i+len(form):]
	}
	return append(out, b...)
}

// matchAt reports whether the secret, each character raw or escaped, starts at b[i], and where
// it ends.
func (x *redactor) matchAt(b []byte, i int, fold bool) (int, bool) {
	for k, r := range x.runes {
		if i >= len(b) {
			return 0, false
		}
		if got, n := decodeEscape(b[i:]); n > 0 && got == r {
			i += n
			continue
		}
		for _, c := range x.enc[k] { // byte by byte: raw, %XX or \xHH
			got, n := decodeByte(b[i:])
			if n == 0 || !(got == c || fold && n == 1 && lowerASCII(got) == lowerASCII(c)) {
				return 0, false
			}
			i += n
		}
	}
	return i, true
}

// decodeByte reads one byte of b: %XX, \xHH, or the byte itself. n is 0 when b is empty.
func decodeByte(b []byte) (c byte, n int) {
	switch {
	case len(b) == 0:
		return 0, 0
	case len(b) >= 3 && b[0] == '%' && isHex(b[1]) && isHex(b[2]):
		return unhex(b[1])<<4 | unhex(b[2]), 3
	case len(b) >= 4 && b[0] == '\\' && b[1] == 'x' && isHex(b[2]) && isHex(b[3]):
		return unhex(b[2])<<4 | unhex(b[3]), 4
	}
	return b[0], 1
}

// shortEscapes are the one-letter backslash escapes of JSON, JavaScript and Go.
var shortEscapes = map[byte]rune{'/': '/', '\\': '\\', '"': '"', '\'': '\'', 'b': '\b', 'f': '\f',
	'n': '\n', 'r': '\r', 't': '\t', 'a': '\a', 'v': '\v'}

// htmlEntities are the named character references an HTML or XML echo uses for ASCII.
var htmlEntities = map[string]rune{"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\'',
	"sol": '/', "plus": '+', "equals": '=', "percnt": '%', "colon": ':', "period": '.', "lowbar": '_',
	"hyphen": '-', "num": '#', "excl": '!', "quest": '?', "commat": '@', "dollar": '$', "ast": '*'}

// decodeEscape reads one escaped character at the start of b: \uXXXX (a surrogate pair as one),
// \UXXXXXXXX, a short backslash escape, an HTML character reference, or '+' for a space. n is 0
// when b does not start with one.
func decodeEscape(b []byte) (r rune, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	switch b[0] {
	case '+':
		return ' ', 1
	case '&':
		return decodeEntity(b)
	case '\\':
	default:
		return 0, 0
	}
	if len(b) < 2 {
		return 0, 0
	}
	switch b[1] {
	case 'u':
		hi, ok := hex4(b, 2)
		if !ok {
			return 0, 0
		}
		if hi >= 0xD800 && hi < 0xDC00 && len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			if lo, ok := hex4(b, 8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00), 12
			}
		}
		return hi, 6
	case 'U':
		hi, ok1 := hex4(b, 2)
		lo, ok2 := hex4(b, 6)
		if !ok1 || !ok2 {
			return 0, 0
		}
		return hi<<16 | lo, 10
	}
	if r, ok := shortEscapes[b[1]]; ok {
		return r, 2
	}
	return 0, 0
}

// decodeEntity reads &#DDD; &#xHH; or &name; at the start of b.
func decodeEntity(b []byte) (rune, int) {
	end := bytes.IndexByte(b[:min(len(b), 12)], ';')
	if end < 2 {
		return 0, 0
	}
	body := b[1:end]
	if body[0] != '#' {
		r, ok := htmlEntities[string(body)]
		if !ok {
			return 0, 0
		}
		return r, end + 1
	}
	digits, base := body[1:], rune(10)
	if len(digits) > 0 && (digits[0] == 'x' || digits[0] == 'X') {
		digits, base = digits[1:], 16
	}
	if len(digits) == 0 || len(digits) > 7 {
		return 0, 0
	}
	var r rune
	for _, c := range digits {
		if !isHex(c) || base == 10 && c > '9' {
			return 0, 0
		}
		r = r*base + rune(unhex(c))
	}
	return r, end + 1
}

func (r *Broker) redactBody(b []byte) []byte {
	if r.redactor == nil {
		return b
	}
	return r.redactor.redact(b, false)
}

func (r *Broker) redactString(s string) string {
	if r.redactor == nil {
		return s
	}
	if out := r.redactor.redact([]byte(s), false); string(out) != s {
		return string(out)
	}
	return s
}

// redactHeaders redacts header values, and names in any case: the transport canonicalises names
// ("x-sk-live-abc" arrives as "X-Sk-Live-Abc"), and a name is case-insensitive anyway.
func (r *Broker) redactHeaders(h http.Header) http.Header {
	if r.redactor == nil {
		return h
	}
	var renamed []string // an upstream may echo the secret in a header name, too
	for name, vs := range h {
		for i, v := range vs {
			vs[i] = r.redactString(v) // in place: the slices are ours
		}
		if r.redactName(name) != name {
			renamed = append(renamed, name)
		}
	}
	for _, name := range renamed {
		to := r.redactName(name)
		h[to] = append(h[to], h[name]...)
		delete(h, name)
	}
	return h
}

func (r *Broker) redactName(name string) string {
	if out := r.redactor.redact([]byte(name), true); string(out) != name {
		return string(out)
	}
	return name
}

// indexFoldASCII is strings.Index with ASCII letters matched in either case.
func indexFoldASCII(s string, sub []byte) int {
	if len(sub) == 0 {
		return -1
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && lowerASCII(s[i+j]) == lowerASCII(sub[j]) {
			j++
		}
		if j == len(sub) {
			return i
		}
	}
	return -1
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}
