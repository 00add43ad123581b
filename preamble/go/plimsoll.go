package plimsoll

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// Request is one call. Path is relative to the grant's base URL and is sent as given, except that
// a '?' in it splits off a query, which goes first: Get("/items?limit=5") sends limit=5.
type Request struct {
	Method   string     // GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS
	Path     string     // e.g. "/items/42"
	Query    url.Values // encoded with names sorted, RFC 3986 percent-encoding
	RawQuery string     // an already-encoded query, sent verbatim before Query
	Header   Header
	Body     []byte // nil: no body
}

// Response is what a forwarded call brought back.
type Response struct {
	Status int
	Header Header // canonical names; hop-by-hop headers already removed
	Body   []byte
}

// OK reports whether the status is 2xx.
func (r *Response) OK() bool { return r.Status >= 200 && r.Status <= 299 }

// Text is the body as a string.
func (r *Response) Text() string { return string(r.Body) }

// JSON decodes the body into v.
func (r *Response) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// Option adjusts a request made with Get, Post, Put, Patch or Delete.
type Option func(*Request)

// WithQuery adds values for a query parameter; several values make an array (tag=a&tag=b).
func WithQuery(name string, values ...string) Option {
	return func(r *Request) {
		if r.Query == nil {
			r.Query = url.Values{}
		}
		r.Query[name] = append(r.Query[name], values...)
	}
}

// WithRawQuery sets an already-encoded query string, sent verbatim.
func WithRawQuery(q string) Option {
	return func(r *Request) { r.RawQuery = q }
}

// WithHeader adds values for a header; several values are sent as several header lines.
func WithHeader(name string, values ...string) Option {
	return func(r *Request) {
		if r.Header == nil {
			r.Header = Header{}
		}
		for _, v := range values {
			r.Header.Add(name, v)
		}
	}
}

// Get calls GET path.
func Get(path string, opts ...Option) (*Response, error) {
	return call("GET", path, nil, opts)
}

// Delete calls DELETE path.
func Delete(path string, opts ...Option) (*Response, error) {
	return call("DELETE", path, nil, opts)
}

// Post calls POST path with a body: nil for none, []byte for exact bytes, a string for text, an
// io.Reader to read, or anything else (json.RawMessage included) for JSON, which also sets
// Content-Type: application/json unless an option set one.
func Post(path string, body any, opts ...Option) (*Response, error) {
	return call("POST", path, body, opts)
}

// Put calls PUT path with a body, as Post does.
func Put(path string, body any, opts ...Option) (*Response, error) {
	return call("PUT", path, body, opts)
}

// Patch calls PATCH path with a body, as Post does.
func Patch(path string, body any, opts ...Option) (*Response, error) {
	return call("PATCH", path, body, opts)
}

func call(method, path string, body any, opts []Option) (*Response, error) {
	req, err := NewRequest(method, path, body, opts...)
	if err != nil {
		return nil, err
	}
	return Do(req)
}

// NewRequest builds a request for Do from a body and options, the way Post and the other
// shortcuts do: see Post for what body may be.
func NewRequest(method, path string, body any, opts ...Option) (Request, error) {
	req := Request{Method: method, Path: path}
	for _, o := range opts {
		o(&req)
	}
	b, contentType, err := encodeBody(body)
	if err != nil {
		return req, fmt.Errorf("plimsoll: %s %s: %w", method, path, err)
	}
	req.Body = b
	if contentType != "" && req.Header.Get("Content-Type") == "" {
		if req.Header == nil {
			req.Header = Header{}
		}
		req.Header.Set("Content-Type", contentType)
	}
	return req, nil
}

// encodeBody turns Post's body argument into bytes and the Content-Type it implies, if any.
func encodeBody(body any) ([]byte, string, error) {
	switch b := body.(type) {
	case nil:
		return nil, "", nil
	case []byte:
		if b == nil {
			b = []byte{}
		}
		return b, "", nil
	case string:
		return []byte(b), "", nil
	case json.RawMessage:
		if !json.Valid(b) {
			return nil, "", fmt.Errorf("the json.RawMessage body is not valid JSON")
		}
		return b, "application/json", nil
	case io.Reader:
		data, err := io.ReadAll(b)
		if err != nil {
			return nil, "", fmt.Errorf("reading the body: %w", err)
		}
		if data == nil {
			data = []byte{}
		}
		return data, "", nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, "", fmt.Errorf("encoding the body as JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), "application/json", nil
}

// Do makes one call. A forwarded call returns its response and a nil error, whatever the status.
// A call the broker answered itself returns an *OutcomeError (see the package documentation).
func Do(req Request) (*Response, error) {
	raw, err := roundTrip(encodeRequest(&req))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.Path, err) // err says "plimsoll: ..."
	}
	resp, err := decodeResponse(raw)
	if err != nil {
		return nil, fmt.Errorf("plimsoll: %s %s: %w", req.Method, req.Path, err)
	}
	if oe := outcomeOf(&req, resp); oe != nil {
		return nil, oe
	}
	return resp, nil
}

// Header maps canonical header names (Content-Type) to their values, like net/http's Header,
// which a guest does not need to link.
type Header map[string][]string

// Get returns the first value of name, or "".
func (h Header) Get(name string) string {
	if vs := h[CanonicalHeaderKey(name)]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// Values returns every value of name.
func (h Header) Values(name string) []string { return h[CanonicalHeaderKey(name)] }

// Set replaces the values of name with value.
func (h Header) Set(name, value string) { h[CanonicalHeaderKey(name)] = []string{value} }

// Add appends value to the values of name.
func (h Header) Add(name, value string) {
	k := CanonicalHeaderKey(name)
	h[k] = append(h[k], value)
}

// Del removes name.
func (h Header) Del(name string) { delete(h, CanonicalHeaderKey(name)) }

// CanonicalHeaderKey returns name with the first letter and each letter after a hyphen in upper
// case and the rest in lower case ("content-type" becomes "Content-Type"). A name holding a
// character that is not allowed in a header name is returned unchanged.
func CanonicalHeaderKey(name string) string {
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return name
		}
	}
	var b strings.Builder
	b.Grow(len(name))
	upper := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case upper && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		case !upper && 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b.WriteByte(c)
		upper = c == '-'
	}
	return b.String()
}

func isTokenChar(c byte) bool {
	return c > ' ' && c < 0x7f && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, rune(c))
}
