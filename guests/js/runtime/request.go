//go:build wasip1

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// request is what a run reads on stdin:
//
//	{"tool": "<JS source>", "input": <any JSON>, "preamble": "<extra JS>", "name": "<tool name>"}
//
// tool is required; input defaults to null, preamble to none and name (also when empty) to
// "tool.js".
type request struct {
	tool     string
	input    string // JSON text
	preamble string
	name     string
}

// decodeRequest decodes stdin strictly: one JSON object, no unknown or duplicate fields, the
// right types, nothing after it.
func decodeRequest(data []byte) (request, error) {
	if req, ok := decodeHostRequest(data); ok {
		return req, nil
	}
	req := request{input: "null", name: defaultToolName}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil {
		return req, describeJSONError(err)
	} else if tok != json.Delim('{') {
		return req, errors.New("want a JSON object")
	}
	seen := map[string]bool{}
	haveTool := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return req, describeJSONError(err)
		}
		key := tok.(string) // inside an object, a key is always a string
		if seen[key] {
			return req, fmt.Errorf("duplicate field %q", key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return req, fmt.Errorf("field %q: %w", key, describeJSONError(err))
		}
		switch key {
		case "tool":
			haveTool = true
			err = decodeString(raw, &req.tool)
		case "input":
			req.input = string(raw)
		case "preamble":
			err = decodeString(raw, &req.preamble)
		case "name":
			err = decodeString(raw, &req.name)
			if err == nil && req.name == "" {
				req.name = defaultToolName
			}
		default:
			return req, fmt.Errorf("unknown field %q (want tool, input, preamble, name)", key)
		}
		if err != nil {
			return req, fmt.Errorf("field %q: %w", key, err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return req, describeJSONError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, errors.New("data after the JSON object")
	}
	if !haveTool {
		return req, errors.New(`missing field "tool"`)
	}
	return req, nil
}

func decodeString(raw json.RawMessage, dst *string) error {
	if len(raw) == 0 || raw[0] != '"' {
		return errors.New("want a string")
	}
	return json.Unmarshal(raw, dst)
}

func describeJSONError(err error) error {
	if err == io.EOF {
		return errors.New("empty input, want a JSON object")
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return errors.New("invalid JSON at byte " + strconv.FormatInt(syn.Offset, 10) + ": " + syn.Error())
	}
	return err
}

// decodeHostRequest decodes the one shape the host sends (encoding/json's output for its request
// struct: the four fields in order, no whitespace) without encoding/json's token machinery, which
// cost about 200 µs per run inside wasm. ok is false for anything else, valid or not, and for
// what it does not unquote itself (a \u escape of a surrogate): decodeRequest then decodes data
// as before, so the result and the errors are the same either way.
func decodeHostRequest(data []byte) (req request, ok bool) {
	rest, ok := bytes.CutPrefix(data, []byte(`{"tool":`))
	if !ok {
		return req, false
	}
	if req.tool, rest, ok = cutString(rest); !ok {
		return req, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"input":`)); !ok {
		return req, false
	}
	n := valueEnd(rest)
	if n <= 0 || isSpace(rest[0]) || isSpace(rest[n-1]) || !json.Valid(rest[:n]) {
		return req, false
	}
	req.input, rest = string(rest[:n]), rest[n:]
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"preamble":`)); !ok {
		return req, false
	}
	if req.preamble, rest, ok = cutString(rest); !ok {
		return req, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"name":`)); !ok {
		return req, false
	}
	if req.name, rest, ok = cutString(rest); !ok || string(rest) != "}" {
		return req, false
	}
	if req.name == "" {
		req.name = defaultToolName
	}
	return req, true
}

// cutString decodes the JSON string at the start of b and returns what follows it. ok is false
// when b does not start with a string it decodes the way encoding/json would: control characters
// and invalid UTF-8 (which encoding/json refuses or replaces), unknown escapes and escaped
// surrogates.
func cutString(b []byte) (s string, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	end, escaped := 1, false
	for ; end < len(b) && b[end] != '"'; end++ {
		switch c := b[end]; {
		case c < 0x20:
			return "", nil, false
		case c == '\\':
			escaped = true
			end++ // skip the escaped byte; a \u's hex digits are plain bytes
		}
	}
	if end >= len(b) || !utf8.Valid(b[1:end]) {
		return "", nil, false
	}
	body := b[1:end]
	if !escaped {
		return string(body), b[end+1:], true
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(body) {
			return "", nil, false
		}
		switch body[i] {
		case '"', '\\', '/':
			out = append(out, body[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if i+4 >= len(body) {
				return "", nil, false
			}
			r, err := strconv.ParseUint(string(body[i+1:i+5]), 16, 16)
			if err != nil || body[i+1] == '+' || body[i+1] == '-' || (0xd800 <= r && r < 0xe000) {
				return "", nil, false
			}
			out = utf8.AppendRune(out, rune(r))
			i += 4
		default:
			return "", nil, false
		}
	}
	return string(out), b[end+1:], true
}

// valueEnd returns the length of the JSON value at the start of b, found by matching brackets
// outside strings, or 0 when it cannot tell. It does not validate the value.
func valueEnd(b []byte) int {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if i >= len(b) {
				return 0
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
