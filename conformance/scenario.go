package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// Scenario is one conformance scenario: an upstream's scripted behaviour, a grant, the operations
// a driver performs, and everything that must be observed. The file format is documented in
// v1/README.md.
type Scenario struct {
	Name        string // the file's base name without .yaml
	File        string // where it was loaded from
	Description string
	Grant       Grant
	Upstream    []UpstreamRoute
	Operations  []Operation
	Trace       []TraceExpect
	Received    []ReceivedExpect
	Audit       []AuditExpect
}

// Grant is the scenario's grant profile, less base_url and credential, which the runner supplies.
type Grant struct {
	Routes         []string
	HealthCheck    string
	RequestHeaders []string          // the profile's request_headers: names beyond the broker's defaults
	Budget         int               // 0 means the profile default
	Limits         map[string]string // passed to the profile's limits as they are
}

// UpstreamRoute is one scripted route of the upstream. The n-th request matching it gets
// Replies[n-1]; the last reply answers every request after that.
type UpstreamRoute struct {
	Method  string
	Pattern string // relative to the base path; '*' matches one segment
	Replies []Reply
}

// Reply is one scripted upstream answer.
type Reply struct {
	Status   int
	Headers  []Header
	Body     *Body
	Delay    time.Duration // wait this long before answering (the request's end stops the wait)
	Truncate bool          // announce more body than is sent, then drop the connection
	Echo     string        // a request header whose values become the body and X-Echo
	WaitFor  int           // hold the answer until this many requests of the route are held at once (or the request ends)
}

// Header is a header name with its values, in order.
type Header struct {
	Name   string
	Values []string
	Array  bool // written as a list in the scenario (and passed to the driver as an array)
}

// Operation is one step of the driver: a call, a sleep, or a group of concurrent calls.
type Operation struct {
	Sleep      time.Duration // a sleep when Call and Concurrent are nil
	Call       *Call
	Concurrent []*Call // calls started together, each before any is waited for (ABI v2)
}

// Call is an API call through the preamble, and what must be observed.
type Call struct {
	Method  string
	Path    string
	Query   *Query
	Headers []Header
	Body    *Body // text, base64 or json only
	Read    string
	Expect  Expect
}

// Query is either a raw, already-encoded string or ordered parameters.
type Query struct {
	Raw    string
	IsRaw  bool
	Params []Header // name → values; Array as written
}

// Expect is what the driver must observe for one call.
type Expect struct {
	Status  int
	Outcome string
	OK      bool
	Headers []HeaderMatch
	Body    *Body
}

// HeaderMatch is an expectation on one header.
type HeaderMatch struct {
	Name     string
	Values   []string // exact values, in order; used when no other form is set
	Absent   bool
	Present  bool
	Between  *[2]int // a single integer value within [lo, hi]
	Contains string  // a single value containing this text
}

// Body is a body to send or to expect. Exactly one form is set.
type Body struct {
	Kind         string // "text", "base64", "json", "json_contains", "repeat", "repeat_base64"
	Text         string
	Bytes        []byte // base64, and the unit of repeat_base64
	JSON         any    // json and json_contains
	Size         int    // repeat and repeat_base64
	JSONText     []byte // JSON encoding of JSON
	cachedRepeat []byte
}

// Content returns the exact bytes of a text, base64, json or repeat body. A json body's bytes are
// its compact encoding; json and json_contains expectations compare values, not bytes.
func (b *Body) Content() []byte {
	switch b.Kind {
	case "text":
		return []byte(b.Text)
	case "base64":
		return b.Bytes
	case "json", "json_contains":
		return b.JSONText
	case "repeat", "repeat_base64":
		if b.cachedRepeat == nil {
			unit := b.Bytes
			if b.Kind == "repeat" {
				unit = []byte(b.Text)
			}
			b.cachedRepeat = bytes.Repeat(unit, b.Size/len(unit)+1)[:b.Size]
		}
		return b.cachedRepeat
	}
	return nil
}

// TraceExpect is an expectation on one trace entry. Zero fields are not checked, except Outcome.
type TraceExpect struct {
	Outcome        string
	Status         int
	UpstreamStatus int
	Route          string
	Probe          string
	ReasonContains string
	MinLatency     time.Duration
}

// ReceivedExpect is one request the upstream must have received, in order.
type ReceivedExpect struct {
	Method   string
	Path     string // relative to the base path
	RawQuery *string
	Query    *Query // compared as parsed name → values, value order within a name kept
	Headers  []HeaderMatch
	Body     *Body // nil: the body must be empty
}

// AuditExpect is one counter of the audit line.
type AuditExpect struct {
	Key   string
	Value int
}

// Calls returns the scenario's call operations, in order.
func (s *Scenario) Calls() []*Call {
	var calls []*Call
	for _, op := range s.Operations {
		if op.Call != nil {
			calls = append(calls, op.Call)
		}
		calls = append(calls, op.Concurrent...)
	}
	return calls
}

// ABI is the guest ABI version the scenario needs: 2 when it makes concurrent calls, else 1.
func (s *Scenario) ABI() int {
	for _, op := range s.Operations {
		if op.Concurrent != nil {
			return 2
		}
	}
	return 1
}

// LoadFS loads every scenario (*.yaml) in dir of fsys, sorted by name. Any invalid scenario
// refuses the whole set, naming the file, line and field.
func LoadFS(fsys fs.FS, dir string) ([]*Scenario, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		file := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		s, err := Parse(file, data)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenarios (*.yaml) in %s", dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// driverInput is the JSON a driver reads on stdin: the scenario's operations.
func (s *Scenario) driverInput() []byte {
	var b bytes.Buffer
	b.WriteString(`{"scenario":`)
	writeJSON(&b, s.Name)
	b.WriteString(`,"operations":[`)
	for i, op := range s.Operations {
		if i > 0 {
			b.WriteByte(',')
		}
		switch {
		case op.Call != nil:
			writeCall(&b, op.Call)
		case op.Concurrent != nil:
			b.WriteString(`{"op":"concurrent","calls":[`)
			for j, c := range op.Concurrent {
				if j > 0 {
					b.WriteByte(',')
				}
				writeCall(&b, c)
			}
			b.WriteString("]}")
		default:
			fmt.Fprintf(&b, `{"op":"sleep","ms":%d}`, op.Sleep.Milliseconds())
		}
	}
	b.WriteString("]}")
	return b.Bytes()
}

// writeCall writes one call operation.
func writeCall(b *bytes.Buffer, c *Call) {
	b.WriteString(`{"op":"call","method":`)
	writeJSON(b, c.Method)
	b.WriteString(`,"path":`)
	writeJSON(b, c.Path)
	if c.Query != nil {
		b.WriteString(`,"query":`)
		if c.Query.IsRaw {
			writeJSON(b, c.Query.Raw)
		} else {
			writeHeaders(b, c.Query.Params)
		}
	}
	if len(c.Headers) > 0 {
		b.WriteString(`,"headers":`)
		writeHeaders(b, c.Headers)
	}
	if c.Body != nil {
		switch c.Body.Kind {
		case "json":
			b.WriteString(`,"json":`)
			b.Write(c.Body.JSONText)
		case "base64", "repeat_base64":
			b.WriteString(`,"body_base64":`)
			writeJSON(b, base64.StdEncoding.EncodeToString(c.Body.Content()))
		default:
			b.WriteString(`,"body":`)
			writeJSON(b, string(c.Body.Content()))
		}
	}
	b.WriteString(`,"read":`)
	writeJSON(b, c.Read)
	b.WriteByte('}')
}

// writeHeaders writes name → value or [values] as a JSON object, in order.
func writeHeaders(b *bytes.Buffer, hs []Header) {
	b.WriteByte('{')
	for i, h := range hs {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(b, h.Name)
		b.WriteByte(':')
		if h.Array {
			writeJSON(b, h.Values)
		} else {
			writeJSON(b, h.Values[0])
		}
	}
	b.WriteByte('}')
}

func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings and string slices always encode
	b.Truncate(b.Len() - 1)
}
