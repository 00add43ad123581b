package broker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
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

// DecodeRequest parses a request envelope strictly: unknown fields, duplicate keys at any depth,
// wrong types, trailing data, invalid UTF-8 and lone surrogates are all refused. It does not
// apply the canonical-path, method or header rules; Validate does.
func DecodeRequest(raw []byte) (Request, error) {
	if !utf8.Valid(raw) {
		return Request{}, invalidf("request envelope is not valid UTF-8")
	}
	if err := checkSurrogates(raw); err != nil {
		return Request{}, err
	}
	d := &envDecoder{dec: json.NewDecoder(bytes.NewReader(raw))}
	req := d.request()
	if d.err == nil {
		if _, err := d.dec.Token(); err != io.EOF {
			d.fail("request envelope has data after its closing '}'")
		}
	}
	return req, d.err
}

type envDecoder struct {
	dec *json.Decoder
	err error
}

func (d *envDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = invalidf(fmt.Sprintf(format, args...))
	}
}

func (d *envDecoder) token() json.Token {
	if d.err != nil {
		return nil
	}
	t, err := d.dec.Token()
	if err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.As(err, &syn):
			d.fail("request envelope is not valid JSON at byte %d: %s", syn.Offset, syn.Error())
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			d.fail("request envelope is truncated")
		default:
			d.fail("request envelope is not valid JSON: %s", err.Error())
		}
		return nil
	}
	return t
}

func (d *envDecoder) request() Request {
	var req Request
	if t := d.token(); t != json.Delim('{') {
		d.fail("request envelope must be a JSON object")
		return req
	}
	seen := map[string]bool{}
	var hasBody, hasB64 bool
	for d.err == nil && d.dec.More() {
		key, _ := d.token().(string)
		if d.err != nil {
			return req
		}
		if seen[key] {
			d.fail("request envelope has the field %s twice", quote(key))
			return req
		}
		seen[key] = true
		switch key {
		case "method":
			req.Method = d.str("method")
		case "path":
			req.Path = d.str("path")
		case "query":
			req.Query = d.str("query")
		case "headers":
			req.Headers = d.headers()
		case "body":
			req.Body, hasBody = []byte(d.str("body")), true
		case "body_base64":
			req.Body, hasB64 = d.base64(), true
		default:
			d.fail("request envelope has an unknown field %s (fields: method, path, query, headers, body, body_base64)", quote(key))
		}
	}
	d.token() // the closing '}'
	switch {
	case d.err != nil:
	case hasBody && hasB64:
		d.fail("request envelope has both body and body_base64; send one")
	case !seen["method"]:
		d.fail("request envelope has no method")
	case !seen["path"]:
		d.fail("request envelope has no path")
	}
	return req
}

func (d *envDecoder) str(field string) string {
	t := d.token()
	s, ok := t.(string)
	if !ok && d.err == nil {
		d.fail("%s must be a string, not %s", field, kind(t))
	}
	return s
}

func (d *envDecoder) base64() []byte {
	s := d.str("body_base64")
	if d.err != nil {
		return nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		d.fail("body_base64 is not valid standard base64: %s", err.Error())
	}
	return b
}

// headers reads {name: string | [string...]}. Names that differ only in case are duplicates.
func (d *envDecoder) headers() http.Header {
	if t := d.token(); t != json.Delim('{') {
		if d.err == nil {
			d.fail("headers must be an object, not %s", kind(t))
		}
		return nil
	}
	h := http.Header{}
	for d.err == nil && d.dec.More() {
		name, _ := d.token().(string)
		if d.err != nil {
			return nil
		}
		canon := http.CanonicalHeaderKey(name)
		if _, dup := h[canon]; dup {
			d.fail("header %s is given twice (header names are case-insensitive)", quote(name))
			return nil
		}
		if len(h) == maxHeaders {
			d.fail("more than %d headers", maxHeaders)
			return nil
		}
		h[canon] = d.headerValues(name)
	}
	d.token()
	return h
}

func (d *envDecoder) headerValues(name string) []string {
	switch t := d.token().(type) {
	case string:
		return []string{t}
	case json.Delim:
		if t == '[' {
			var vals []string
			for d.err == nil && d.dec.More() {
				v, ok := d.token().(string)
				if !ok && d.err == nil {
					d.fail("header %s values must be strings", quote(name))
				}
				vals = append(vals, v)
			}
			d.token()
			return vals
		}
		d.fail("header %s must be a string or an array of strings", quote(name))
	default:
		if d.err == nil {
			d.fail("header %s must be a string or an array of strings, not %s", quote(name), kind(t))
		}
	}
	return nil
}

func kind(t json.Token) string {
	switch v := t.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	}
	return "something else"
}

// checkSurrogates refuses \uD800–\uDFFF escapes that are not a proper high+low pair: the standard
// decoder would silently turn them into U+FFFD, so the bytes sent would differ from those given.
func checkSurrogates(raw []byte) error {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+1 < len(raw) && raw[i+1] != 'u' {
			i++ // a two-byte escape such as \\ or \"
			continue
		}
		r, ok := hex4(raw, i+2)
		if !ok {
			continue // the JSON decoder reports the malformed escape
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return invalidf(fmt.Sprintf("request envelope has a lone low surrogate \\u%04X", r))
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := hex4(raw, i+8)
			if i+7 >= len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' || !ok || lo < 0xDC00 || lo > 0xDFFF {
				return invalidf(fmt.Sprintf("request envelope has a lone high surrogate \\u%04X", r))
			}
			i += 11
		default:
			i += 5
		}
	}
	return nil
}

func hex4(raw []byte, at int) (rune, bool) {
	if at < 0 || at+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[at:at+4]), 16, 32)
	return rune(n), err == nil
}

var allowedMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true,
}

// Validate applies the method, canonical-path, query and header rules. credentialHeader is the
// profile's credential header (canonical form), which the guest may not set either.
func Validate(req *Request, credentialHeader string) error {
	if !allowedMethods[req.Method] {
		return invalidf(fmt.Sprintf("method %s is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS", quote(req.Method)))
	}
	if err := CheckPath(req.Path); err != nil {
		return err
	}
	if err := checkQuery(req.Query); err != nil {
		return err
	}
	return checkHeaders(req.Headers, credentialHeader)
}

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
// than the one matched, exactly as with %2E.
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
		if r >= 0x80 && foldsToDelimiter(r) {
			return bad(fmt.Sprintf("contains an encoded U+%04X, which Unicode folding (NFKC) turns into '.', '/', '\\' or '%%'", r))
		}
	}
	return nil
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

// forbiddenHeaders may not be set by a guest: credentials, routing, and framing belong to the
// broker. Any header starting with a prefix in forbiddenPrefixes is refused too.
var forbiddenHeaders = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Host": true,
	"Forwarded": true, "Connection": true, "Keep-Alive": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Content-Length": true, "Expect": true,
	"X-Real-Ip": true, "Plimsoll-Outcome": true,
}

var forbiddenPrefixes = []string{"Proxy-", "X-Forwarded-"}

func checkHeaders(h http.Header, credentialHeader string) error {
	for name, vals := range h {
		if !isToken(name) {
			return invalidf(fmt.Sprintf("header name %s is not a valid HTTP token", quote(name)))
		}
		// DecodeRequest canonicalises names; a Request built in Go may not have. The transport
		// sends a key as spelled, so "authorization" would pass the checks below and go out
		// next to the broker's own headers.
		if canon := http.CanonicalHeaderKey(name); canon != name {
			return invalidf(fmt.Sprintf("header name %s is not in canonical form (%s)", quote(name), canon))
		}
		if forbiddenHeaders[name] || name == credentialHeader || hasAnyPrefix(name, forbiddenPrefixes) {
			return invalidf(fmt.Sprintf("header %s may not be set by a tool: the broker owns it", name))
		}
		for _, v := range vals {
			if len(v) > maxHeaderBytes {
				return invalidf(fmt.Sprintf("header %s value is %d bytes, over the %d-byte cap", name, len(v), maxHeaderBytes))
			}
			if hasControl(v) {
				return invalidf(fmt.Sprintf("header %s value contains a control character (CR, LF, NUL or similar)", name))
			}
		}
	}
	return nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// hasControl reports a control character other than tab. Bytes of multi-byte UTF-8 sequences
// are all ≥ 0x80, so a byte scan finds exactly the control runes.
func hasControl(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}

// tokenChar marks the bytes an HTTP token may hold (RFC 9110 tchar).
var tokenChar = func() (t [256]bool) {
	for c := '!'; c <= '~'; c++ {
		t[c] = !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
	}
	return t
}()

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenChar[s[i]] {
			return false
		}
	}
	return true
}
