// Package ops is what the Go-written conformance drivers share: it performs a scenario's
// operations (preamble/README.md) through the Go preamble and reports the observations. The Go
// guest driver (../../go) and the Extism plugin driver (../../extism-go), whose preamble carries
// the same client over plimsoll_call, differ only in where the input comes from and the output
// goes.
package ops

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	plimsoll "github.com/plimsoll/plimsoll/preamble/go"
)

// Perform runs the operations in input and returns the observations document.
func Perform(input []byte) ([]byte, error) {
	var in inputDoc
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, errors.New("the operations are not valid JSON: " + err.Error())
	}
	out := struct {
		Observations []observation `json:"observations"`
	}{Observations: []observation{}}
	for _, op := range in.Operations {
		switch op.Op {
		case "sleep":
			time.Sleep(time.Duration(op.Ms) * time.Millisecond)
			out.Observations = append(out.Observations, observation{Op: "sleep"})
		case "concurrent":
			out.Observations = append(out.Observations, concurrent(op.Calls))
		default:
			out.Observations = append(out.Observations, call(op))
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, errors.New("writing the observations: " + err.Error())
	}
	return buf.Bytes(), nil
}

type inputDoc struct {
	Operations []operation `json:"operations"`
}

// request builds op's request, as the preamble's function for the method would.
func request(op operation) (plimsoll.Request, error) {
	opts, body, err := callArgs(op)
	if err != nil {
		return plimsoll.Request{}, err
	}
	return plimsoll.NewRequest(op.Method, op.Path, body, opts...)
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
	Calls      []operation                `json:"calls"`
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
	// Observations are a concurrent operation's, one per call.
	Observations []observation `json:"observations,omitempty"`
}

// concurrent starts every call (guest ABI v2, the preamble's Go) before waiting for any, then
// observes each in the order listed.
func concurrent(ops []operation) observation {
	calls := make([]*plimsoll.Call, len(ops))
	errs := make([]error, len(ops))
	for i, op := range ops {
		req, err := request(op)
		if err != nil {
			errs[i] = err
			continue
		}
		calls[i] = plimsoll.Go(req)
	}
	o := observation{Op: "concurrent"}
	for i, op := range ops {
		if errs[i] != nil {
			o.Observations = append(o.Observations, observation{Op: "call", Error: "driver: " + errs[i].Error()})
			continue
		}
		resp, err := calls[i].Wait()
		o.Observations = append(o.Observations, observe(op, resp, err))
	}
	return o
}

// callArgs reads op's query, headers and body as the preamble's options and body argument.
func callArgs(op operation) ([]plimsoll.Option, any, error) {
	var opts []plimsoll.Option
	if len(op.Query) > 0 {
		if op.Query[0] == '"' {
			var raw string
			if err := json.Unmarshal(op.Query, &raw); err != nil {
				return nil, nil, errors.New("query: " + err.Error())
			}
			opts = append(opts, plimsoll.WithRawQuery(raw))
		} else {
			var params map[string]json.RawMessage
			if err := json.Unmarshal(op.Query, &params); err != nil {
				return nil, nil, errors.New("query: " + err.Error())
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
			return nil, nil, errors.New("body_base64: " + err.Error())
		}
		body = b
	case op.JSON != nil:
		body = op.JSON // a json.RawMessage: the preamble sends it as JSON
	}
	return opts, body, nil
}

// call makes one call with the preamble's function for the method when there is one, and Do
// otherwise (HEAD, OPTIONS, or a GET or DELETE with a body).
func call(op operation) observation {
	opts, body, err := callArgs(op)
	if err != nil {
		return observation{Op: "call", Error: "driver: " + err.Error()}
	}
	var resp *plimsoll.Response
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
	return observe(op, resp, err)
}

// observe reports what a call's answer was.
func observe(op operation, resp *plimsoll.Response, err error) observation {
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
