//go:build wasip1

package main

import (
	"encoding/base64"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// newResponse does what the preamble's new Response(JSON.parse(text)) does, mostly without
// JSON.parse: goja's takes about 300 µs for a 100-byte envelope inside wasm. Envelopes in the
// shape the host sends ({"status": <int>, "headers": {name: [strings]}, "body" or "body_base64":
// <string>}, each field at most once, strings that are valid UTF-8 with no lone surrogate) are
// decoded here, the response is built as the constructor builds it, and the envelope's headers
// object is only made when the preamble first reads it (the envelope object never reaches a
// tool). Anything else goes to JSON.parse and the constructor, so the result, or the error, is
// what it always was.
func (e *engine) newResponse(text string) goja.Value {
	if e.response == nil {
		panic(e.rt.NewTypeError("plimsoll: the preamble did not call setResponse"))
	}
	env, ok := parseEnvelope(text)
	if !ok {
		v, err := e.jsonParse(goja.Undefined(), e.rt.ToValue(text))
		if err != nil {
			panic(err)
		}
		res, err := e.rt.New(e.response, v)
		if err != nil {
			panic(err)
		}
		return res
	}
	rt := e.rt
	// As Response(env): status, ok, body (body_base64 decoded as UTF-8 when present, else body,
	// else ""), then the envelope under its symbol.
	body := ""
	if env.hasBase64 {
		b, err := base64.StdEncoding.DecodeString(env.base64)
		if err != nil {
			panic(rt.NewTypeError("plimsoll: invalid base64 in a response: %v", err))
		}
		body = string(b)
	} else if env.hasBody {
		body = env.body
	}
	res := rt.NewObject()
	res.SetPrototype(e.responseProto)
	if env.hasStatus {
		res.Set("status", env.status)
		res.Set("ok", env.status >= 200 && env.status <= 299)
	} else {
		res.Set("status", goja.Undefined())
		res.Set("ok", false)
	}
	res.Set("body", body)
	res.SetSymbol(e.envSym, e.envelopeObject(env))
	return res
}

// envelopeObject is the object JSON.parse makes of a decoded envelope, with headers built on
// first read.
func (e *engine) envelopeObject(env envelope) *goja.Object {
	rt := e.rt
	o := rt.NewObject()
	if env.hasStatus {
		o.Set("status", env.status)
	}
	if env.hasHeaders {
		headers := env.headers
		var built goja.Value
		get := rt.ToValue(func(goja.FunctionCall) goja.Value {
			if built == nil {
				h := rt.NewObject()
				for _, hd := range headers {
					vs := make([]any, len(hd.values))
					for i, v := range hd.values {
						vs[i] = v
					}
					h.DefineDataProperty(hd.name, rt.NewArray(vs...), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
				}
				built = h
			}
			return built
		})
		o.DefineAccessorProperty("headers", get, nil, goja.FLAG_TRUE, goja.FLAG_TRUE)
	}
	if env.hasBody {
		o.Set("body", env.body)
	}
	if env.hasBase64 {
		o.Set("body_base64", env.base64)
	}
	return o
}

type envelope struct {
	status                                    int64
	headers                                   []header
	body, base64                              string
	hasStatus, hasHeaders, hasBody, hasBase64 bool
}

type header struct {
	name   string
	values []string
}

// parseEnvelope decodes a response envelope in the shape the host sends; ok is false for
// anything else, including what JSON.parse would accept.
func parseEnvelope(s string) (env envelope, ok bool) {
	p := scanner{s: s}
	if !p.expect('{') {
		return env, false
	}
	for first := true; ; first = false {
		p.space()
		if p.peek() == '}' && first {
			p.i++
			break
		}
		key, ok := p.str()
		if !ok || !p.expect(':') {
			return env, false
		}
		switch key {
		case "status":
			if env.hasStatus {
				return env, false
			}
			env.hasStatus = true
			if env.status, ok = p.smallInt(); !ok {
				return env, false
			}
		case "headers":
			if env.hasHeaders {
				return env, false
			}
			env.hasHeaders = true
			if env.headers, ok = p.headers(); !ok {
				return env, false
			}
		case "body":
			if env.hasBody {
				return env, false
			}
			env.hasBody = true
			p.space()
			if env.body, ok = p.str(); !ok {
				return env, false
			}
		case "body_base64":
			if env.hasBase64 {
				return env, false
			}
			env.hasBase64 = true
			p.space()
			if env.base64, ok = p.str(); !ok {
				return env, false
			}
		default:
			return env, false
		}
		p.space()
		switch p.peek() {
		case ',':
			p.i++
			continue
		case '}':
			p.i++
		default:
			return env, false
		}
		break
	}
	p.space()
	return env, p.i == len(s)
}

type scanner struct {
	s string
	i int
}

func (p *scanner) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *scanner) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *scanner) expect(c byte) bool {
	p.space()
	if p.peek() != c {
		return false
	}
	p.i++
	return true
}

// smallInt reads a non-negative integer of at most 9 digits, with no leading zero.
func (p *scanner) smallInt() (int64, bool) {
	p.space()
	start := p.i
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
	}
	n := p.i - start
	if n == 0 || n > 9 || (n > 1 && p.s[start] == '0') {
		return 0, false
	}
	switch p.peek() {
	case '.', 'e', 'E':
		return 0, false
	}
	v, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
	return v, err == nil
}

// headers reads {"Name": ["value", ...], ...} with no name twice.
func (p *scanner) headers() ([]header, bool) {
	if !p.expect('{') {
		return nil, false
	}
	var out []header
	p.space()
	if p.peek() == '}' {
		p.i++
		return out, true
	}
	for {
		p.space()
		name, ok := p.str()
		if !ok || !p.expect(':') || !p.expect('[') {
			return nil, false
		}
		for _, h := range out {
			if h.name == name {
				return nil, false
			}
		}
		var values []string
		p.space()
		if p.peek() == ']' {
			p.i++
		} else {
			for {
				p.space()
				v, ok := p.str()
				if !ok {
					return nil, false
				}
				values = append(values, v)
				p.space()
				if p.peek() == ',' {
					p.i++
					continue
				}
				if p.peek() != ']' {
					return nil, false
				}
				p.i++
				break
			}
		}
		out = append(out, header{name: name, values: values})
		p.space()
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return out, true
		default:
			return nil, false
		}
	}
}

// str reads a JSON string at the current position. It refuses what JSON.parse refuses, and also
// invalid UTF-8 and escapes of lone surrogates, which a Go string cannot carry as JSON.parse
// would.
func (p *scanner) str() (string, bool) {
	if p.peek() != '"' {
		return "", false
	}
	p.i++
	start := p.i
	ascii, escaped := true, false
	for ; p.i < len(p.s); p.i++ {
		c := p.s[p.i]
		switch {
		case c == '"':
			raw := p.s[start:p.i]
			p.i++
			if !ascii && !utf8.ValidString(raw) {
				return "", false
			}
			if !escaped {
				return raw, true
			}
			return unescape(raw)
		case c == '\\':
			escaped = true
			p.i++ // the escaped character; unescape checks it
		case c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", false
}

func unescape(raw string) (string, bool) {
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		i++
		if i == len(raw) {
			return "", false
		}
		switch raw[i] {
		case '"', '\\', '/':
			b = append(b, raw[i])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(raw, i+1)
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if r >= 0xdc00 || i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
					return "", false
				}
				r2, ok := hex4(raw, i+3)
				if !ok {
					return "", false
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			b = utf8.AppendRune(b, r)
		default:
			return "", false
		}
	}
	return string(b), true
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
