package broker

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
)

// decodePlain decodes a well-formed request envelope in one pass over its bytes, without
// encoding/json's token machinery (half the host's share of a denied call's decoding). It
// takes only what the strict decoder would accept unchanged: anything else (a duplicate,
// an unknown field, a wrong type, a syntax error, too many headers) returns ok=false, and the
// strict decoder then decides and names what is wrong. raw is valid UTF-8 with no lone
// surrogate escape (DecodeRequest checks both first). Escaped strings are unquoted by
// encoding/json itself. FuzzDecodePlain holds it to the strict decoder's result.
func decodePlain(raw []byte) (req Request, ok bool) {
	p := plainParser{raw: raw}
	const (
		method = 1 << iota
		path
		query
		headers
		body
		bodyB64
	)
	var seen int
	if !p.skip('{') {
		return req, false
	}
	for {
		key, ok := p.str()
		if !ok || !p.skip(':') {
			return req, false
		}
		var bit int
		switch key {
		case "method":
			bit, ok = method, p.into(&req.Method)
		case "path":
			bit, ok = path, p.into(&req.Path)
		case "query":
			bit, ok = query, p.into(&req.Query)
		case "headers":
			bit = headers
			req.Headers, ok = p.headers()
		case "body":
			var s string
			bit, ok = body, p.into(&s)
			req.Body = []byte(s)
		case "body_base64":
			var s string
			bit, ok = bodyB64, p.into(&s)
			if ok {
				var err error
				req.Body, err = base64.StdEncoding.Strict().DecodeString(s)
				ok = err == nil
			}
		}
		if !ok || bit == 0 || seen&bit != 0 {
			return req, false
		}
		seen |= bit
		if p.skip('}') {
			break
		}
		if !p.skip(',') {
			return req, false
		}
	}
	p.space()
	complete := seen&(method|path) == method|path && seen&(body|bodyB64) != body|bodyB64
	return req, complete && p.i == len(raw)
}

type plainParser struct {
	raw []byte
	i   int
}

func (p *plainParser) space() {
	for p.i < len(p.raw) {
		switch p.raw[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// skip consumes c, after any white space, and reports whether it was there.
func (p *plainParser) skip(c byte) bool {
	p.space()
	if p.i < len(p.raw) && p.raw[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *plainParser) into(s *string) (ok bool) {
	*s, ok = p.str()
	return ok
}

// str reads a JSON string; one with an escape is unquoted by encoding/json.
func (p *plainParser) str() (string, bool) {
	if !p.skip('"') {
		return "", false
	}
	start, escaped := p.i, false
	for ; p.i < len(p.raw); p.i++ {
		switch c := p.raw[p.i]; {
		case c == '"':
			p.i++
			if !escaped {
				return string(p.raw[start : p.i-1]), true
			}
			var s string
			return s, json.Unmarshal(p.raw[start-1:p.i], &s) == nil
		case c == '\\':
			escaped = true
			p.i++ // the escaped byte cannot end the string
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// headers reads {name: string | [string...]}, with names unique in canonical form.
func (p *plainParser) headers() (http.Header, bool) {
	if !p.skip('{') {
		return nil, false
	}
	h := http.Header{}
	if p.skip('}') {
		return h, true
	}
	for {
		name, ok := p.str()
		if !ok || !p.skip(':') {
			return nil, false
		}
		canon := http.CanonicalHeaderKey(name)
		if _, dup := h[canon]; dup || len(h) == maxHeaders {
			return nil, false
		}
		if h[canon], ok = p.values(); !ok {
			return nil, false
		}
		if p.skip('}') {
			return h, true
		}
		if !p.skip(',') {
			return nil, false
		}
	}
}

// values reads a header's string or array of strings; [] is nil, as the strict decoder has it.
func (p *plainParser) values() ([]string, bool) {
	if !p.skip('[') {
		s, ok := p.str()
		return []string{s}, ok
	}
	var vals []string
	if p.skip(']') {
		return nil, true
	}
	for {
		v, ok := p.str()
		if !ok {
			return nil, false
		}
		vals = append(vals, v)
		if p.skip(']') {
			return vals, true
		}
		if !p.skip(',') {
			return nil, false
		}
	}
}
