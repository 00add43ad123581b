package broker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"
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
	if req, ok := decodePlain(raw); ok {
		return req, nil
	}
	return decodeStrict(raw)
}

// decodeStrict is the token-by-token decoder that names what is wrong with an envelope.
func decodeStrict(raw []byte) (Request, error) {
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

// hex4 reads four hex digits at raw[at:], as a \uXXXX escape holds them.
func hex4(raw []byte, at int) (rune, bool) {
	if at < 0 || at+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[at : at+4] {
		if !isHex(c) {
			return 0, false
		}
		r = r<<4 | rune(unhex(c))
	}
	return r, true
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
