//go:build wasip1

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
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
