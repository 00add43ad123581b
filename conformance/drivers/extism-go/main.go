//go:build wasip1

// Command driver is the conformance driver for Extism plugins written in Go (go-pdk) on
// preamble/extism-go: a plugin whose function run reads a scenario's operations as its input,
// performs them through the preamble only (plimsoll_call), and outputs its observations as JSON.
// The contract is in preamble/README.md; the operations are the Go driver's (../go).
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/extism/go-pdk"

	plimsoll "github.com/plimsoll/plimsoll/preamble/extism-go"
)

func main() {}

type input struct {
	Operations []operation `json:"operations"`
}

type operation struct {
	Op         string                     `json:"op"`
	Ms         int64                      `json:"ms"`
	Method     string                     `json:"method"`
	Path       string                     `json:"path"`
	Query      json.RawMessage            `json:"query"`
	Headers    map[string]json.RawMessage `json:"headers"`
	Body       *string                    `json:"body"`
	BodyBase64 *string                    `json:"body_base64"`
	JSON       json.RawMessage            `json:"json"`
	Read       string                     `json:"read"`
}

type observation struct {
	Op         string              `json:"op"`
	Status     int                 `json:"status,omitempty"`
	OK         *bool               `json:"ok,omitempty"`
	Outcome    string              `json:"outcome,omitempty"`
	Headers    map[string][]string `json:"headers,omitempty"`
	Body       *string             `json:"body,omitempty"`
	BodyBase64 *string             `json:"body_base64,omitempty"`
	RetryAfter *float64            `json:"retry_after,omitempty"`
	Error      string              `json:"error,omitempty"`
}

//go:wasmexport run
func run() int32 {
	var in input
	if err := json.Unmarshal(pdk.Input(), &in); err != nil {
		return fail("the operations are not valid JSON: " + err.Error())
	}
	out := struct {
		Observations []observation `json:"observations"`
	}{Observations: []observation{}}
	for _, op := range in.Operations {
		if op.Op == "sleep" {
			time.Sleep(time.Duration(op.Ms) * time.Millisecond)
			out.Observations = append(out.Observations, observation{Op: "sleep"})
			continue
		}
		out.Observations = append(out.Observations, call(op))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return fail("writing the observations: " + err.Error())
	}
	pdk.Output(buf.Bytes())
	return 0
}

func fail(msg string) int32 {
	pdk.SetErrorString(fmt.Sprint("driver: ", msg))
	return 1
}

// call makes one call with the preamble's function for the method when there is one, and Do
// otherwise (HEAD, OPTIONS, or a GET or DELETE with a body).
func call(op operation) observation {
	var opts []plimsoll.Option
	if len(op.Query) > 0 {
		if op.Query[0] == '"' {
			var raw string
			if err := json.Unmarshal(op.Query, &raw); err != nil {
				return observation{Op: "call", Error: "driver: query: " + err.Error()}
			}
			opts = append(opts, plimsoll.WithRawQuery(raw))
		} else {
			var params map[string]json.RawMessage
			if err := json.Unmarshal(op.Query, &params); err != nil {
				return observation{Op: "call", Error: "driver: query: " + err.Error()}
			}
			for name, v := range params {
				opts = append(opts, plimsoll.WithQuery(name, values(v)...))
			}
		}
	}
	for name, v := range op.Headers {
		opts = append(opts, plimsoll.WithHeader(name, values(v)...))
	}
	var body any
	switch {
	case op.Body != nil:
		body = *op.Body
	case op.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*op.BodyBase64)
		if err != nil {
			return observation{Op: "call", Error: "driver: body_base64: " + err.Error()}
		}
		body = b
	case op.JSON != nil:
		body = op.JSON // a json.RawMessage: the preamble sends it as JSON
	}

	var resp *plimsoll.Response
	var err error
	switch {
	case op.Method == "GET" && body == nil:
		resp, err = plimsoll.Get(op.Path, opts...)
	case op.Method == "DELETE" && body == nil:
		resp, err = plimsoll.Delete(op.Path, opts...)
	case op.Method == "POST":
		resp, err = plimsoll.Post(op.Path, body, opts...)
	case op.Method == "PUT":
		resp, err = plimsoll.Put(op.Path, body, opts...)
	case op.Method == "PATCH":
		resp, err = plimsoll.Patch(op.Path, body, opts...)
	default:
		var req plimsoll.Request
		if req, err = plimsoll.NewRequest(op.Method, op.Path, body, opts...); err == nil {
			resp, err = plimsoll.Do(req)
		}
	}

	o := observation{Op: "call", Outcome: string(plimsoll.Forwarded)}
	var refused *plimsoll.OutcomeError
	switch {
	case errors.As(err, &refused):
		resp, o.Outcome = refused.Response, string(refused.Outcome)
		if errors.Is(err, plimsoll.ErrShed) {
			secs := refused.RetryAfter.Seconds()
			o.RetryAfter = &secs
		}
	case err != nil:
		return observation{Op: "call", Error: err.Error()}
	}
	ok := err == nil && resp.OK()
	o.Status, o.OK, o.Headers = resp.Status, &ok, resp.Header
	if op.Read == "bytes" {
		s := base64.StdEncoding.EncodeToString(resp.Body)
		o.BodyBase64 = &s
	} else {
		s := resp.Text()
		o.Body = &s
	}
	return o
}

// values reads a query or header value: a string or an array of strings.
func values(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	return many
}
