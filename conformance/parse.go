package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/plimsoll/plimsoll/abi"
)

// ParseError is a refused scenario file: it names the file, the line and the field.
type ParseError struct {
	File   string
	Line   int
	Field  string
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Field, e.Reason)
}

// outcomes is every outcome name a scenario may expect.
var outcomes = func() map[string]bool {
	m := map[string]bool{}
	for _, o := range abi.Outcomes {
		m[o] = true
	}
	return m
}()

var methods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
	"DELETE": true, "OPTIONS": true}

// Parse reads one scenario file. The scenario's name is the file's base name without .yaml.
func Parse(file string, data []byte) (*Scenario, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &ParseError{File: file, Line: 1, Field: "(file)", Reason: err.Error()}
	}
	d := &decoder{file: file}
	dealias(&doc, map[*yaml.Node]bool{})
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		d.fail(&doc, "(file)", "want one YAML document holding a mapping")
		return nil, d.err
	}
	s := d.scenario(doc.Content[0])
	if d.err != nil {
		return nil, d.err
	}
	s.File = file
	s.Name = strings.TrimSuffix(path.Base(file), ".yaml")
	return s, nil
}

// dealias replaces every alias (*name) by the node its anchor (&name) marks, so the walk below
// sees plain nodes. Shared nodes are visited once.
func dealias(n *yaml.Node, seen map[*yaml.Node]bool) {
	if seen[n] {
		return
	}
	seen[n] = true
	for i, c := range n.Content {
		for c.Kind == yaml.AliasNode && c.Alias != nil {
			c = c.Alias
		}
		n.Content[i] = c
		dealias(c, seen)
	}
}

// decoder walks YAML nodes and keeps the first error.
type decoder struct {
	file string
	err  *ParseError
}

func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) {
	if d.err == nil {
		d.err = &ParseError{File: d.file, Line: n.Line, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
}

type pair struct {
	key string
	val *yaml.Node
}

// fields reads a mapping whose keys must all be in known, and returns its entries by key.
func (d *decoder) fields(n *yaml.Node, field string, known ...string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	for _, p := range d.mapping(n, field) {
		if !slices.Contains(known, p.key) {
			d.fail(p.val, join(field, p.key), "unknown field (known: %s)", strings.Join(known, ", "))
			continue
		}
		out[p.key] = p.val
	}
	return out
}

// mapping reads a mapping's entries in order.
func (d *decoder) mapping(n *yaml.Node, field string) []pair {
	if n.Kind != yaml.MappingNode {
		d.fail(n, field, "want a mapping, not %s", kind(n))
		return nil
	}
	var out []pair
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			d.fail(k, field, "keys must be plain strings")
			return nil
		}
		if seen[k.Value] {
			d.fail(k, join(field, k.Value), "given twice")
		}
		seen[k.Value] = true
		out = append(out, pair{k.Value, n.Content[i+1]})
	}
	return out
}

func (d *decoder) seq(n *yaml.Node, field string) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, field, "want a list, not %s", kind(n))
		return nil
	}
	return n.Content
}

func (d *decoder) str(n *yaml.Node, field string) string {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.fail(n, field, "want a string, not %s", kind(n))
		return ""
	}
	return n.Value
}

func (d *decoder) integer(n *yaml.Node, field string) int {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.fail(n, field, "want a whole number, not %s", kind(n))
		return 0
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		d.fail(n, field, "want a whole number: %v", err)
	}
	return v
}

func (d *decoder) boolean(n *yaml.Node, field string) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		d.fail(n, field, "want true or false, not %s", kind(n))
		return false
	}
	return n.Value == "true"
}

func (d *decoder) duration(n *yaml.Node, field string) time.Duration {
	s := d.str(n, field)
	if d.err != nil {
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		d.fail(n, field, "want a duration such as 300ms or 1.5s, not %q", s)
	}
	return v
}

func (d *decoder) strings(n *yaml.Node, field string) []string {
	out := []string{} // an empty list stays a list: the driver gets [], not null
	for i, item := range d.seq(n, field) {
		out = append(out, d.str(item, fmt.Sprintf("%s[%d]", field, i)))
	}
	return out
}

// jsonValue reads any YAML value that JSON can hold.
func (d *decoder) jsonValue(n *yaml.Node, field string) (any, []byte) {
	var v any
	if err := n.Decode(&v); err != nil {
		d.fail(n, field, "%v", err)
		return nil, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		d.fail(n, field, "not representable as JSON: %v", err)
		return nil, nil
	}
	text := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	var norm any // numbers and maps as encoding/json gives them, for comparisons
	_ = json.Unmarshal(text, &norm)
	return norm, text
}

func (d *decoder) scenario(n *yaml.Node) *Scenario {
	f := d.fields(n, "(top)", "description", "grant", "upstream", "operations", "trace", "received", "audit")
	s := &Scenario{}
	for _, req := range []string{"description", "grant", "upstream", "operations", "trace", "received"} {
		if f[req] == nil && d.err == nil {
			d.fail(n, req, "is required")
		}
	}
	if d.err != nil {
		return s
	}
	s.Description = d.str(f["description"], "description")
	s.Grant = d.grant(f["grant"])
	for _, p := range d.mapping(f["upstream"], "upstream") {
		s.Upstream = append(s.Upstream, d.upstreamRoute(p))
	}
	for i, op := range d.seq(f["operations"], "operations") {
		s.Operations = append(s.Operations, d.operation(op, fmt.Sprintf("operations[%d]", i)))
	}
	for i, t := range d.seq(f["trace"], "trace") {
		s.Trace = append(s.Trace, d.traceExpect(t, fmt.Sprintf("trace[%d]", i)))
	}
	for i, r := range d.seq(f["received"], "received") {
		s.Received = append(s.Received, d.receivedExpect(r, fmt.Sprintf("received[%d]", i)))
	}
	if a := f["audit"]; a != nil {
		for _, p := range d.mapping(a, "audit") {
			s.Audit = append(s.Audit, AuditExpect{Key: p.key, Value: d.integer(p.val, join("audit", p.key))})
		}
	}
	if d.err == nil {
		d.check(n, s)
	}
	return s
}

// check cross-checks a scenario: one trace entry per call, with the call's outcome.
func (d *decoder) check(n *yaml.Node, s *Scenario) {
	calls := s.Calls()
	if len(s.Trace) != len(calls) {
		d.fail(n, "trace", "has %d entries but the scenario makes %d calls (every call is traced once)", len(s.Trace), len(calls))
		return
	}
	for i, c := range calls {
		if s.Trace[i].Outcome != c.Expect.Outcome {
			d.fail(n, fmt.Sprintf("trace[%d]", i), "outcome %q disagrees with call %d's expected outcome %q",
				s.Trace[i].Outcome, i+1, c.Expect.Outcome)
			return
		}
	}
	if len(calls) == 0 {
		d.fail(n, "operations", "make no call")
	}
}

func (d *decoder) grant(n *yaml.Node) Grant {
	f := d.fields(n, "grant", "routes", "request_headers", "health_check", "budget", "limits")
	var g Grant
	if f["routes"] == nil {
		d.fail(n, "grant.routes", "is required")
		return g
	}
	g.Routes = d.strings(f["routes"], "grant.routes")
	if h := f["request_headers"]; h != nil {
		g.RequestHeaders = d.strings(h, "grant.request_headers")
	}
	if h := f["health_check"]; h != nil {
		g.HealthCheck = d.str(h, "grant.health_check")
	}
	if b := f["budget"]; b != nil {
		g.Budget = d.integer(b, "grant.budget")
	}
	if l := f["limits"]; l != nil {
		g.Limits = map[string]string{}
		for _, p := range d.mapping(l, "grant.limits") {
			g.Limits[p.key] = d.str(p.val, join("grant.limits", p.key))
		}
	}
	return g
}

// methodPath reads "METHOD /path". The path is taken as written, so a scenario can send a
// non-canonical one.
func (d *decoder) methodPath(n *yaml.Node, field string) (string, string) {
	s := d.str(n, field)
	m, p, ok := strings.Cut(s, " ")
	if d.err == nil && (!ok || !methods[m]) {
		d.fail(n, field, "want \"METHOD /path\" with an upper-case method, not %q", s)
	}
	return m, p
}

func (d *decoder) upstreamRoute(p pair) UpstreamRoute {
	field := join("upstream", p.key)
	m, pat, ok := strings.Cut(p.key, " ")
	if !ok || !methods[m] || !strings.HasPrefix(pat, "/") {
		d.fail(p.val, field, "a route is \"METHOD /path\", with '*' for one segment")
	}
	r := UpstreamRoute{Method: m, Pattern: pat}
	if p.val.Kind == yaml.SequenceNode {
		for i, item := range p.val.Content {
			r.Replies = append(r.Replies, d.reply(item, fmt.Sprintf("%s[%d]", field, i)))
		}
		if len(r.Replies) == 0 {
			d.fail(p.val, field, "has no replies")
		}
	} else {
		r.Replies = []Reply{d.reply(p.val, field)}
	}
	return r
}

func (d *decoder) reply(n *yaml.Node, field string) Reply {
	f := d.fields(n, field, "status", "headers", "body", "delay", "truncate", "echo", "wait_for")
	r := Reply{Status: 200}
	if v := f["status"]; v != nil {
		r.Status = d.integer(v, join(field, "status"))
		if r.Status < 100 || r.Status > 599 {
			d.fail(v, join(field, "status"), "%d is not an HTTP status", r.Status)
		}
	}
	if v := f["headers"]; v != nil {
		r.Headers = d.headers(v, join(field, "headers"))
	}
	if v := f["body"]; v != nil {
		r.Body = d.body(v, join(field, "body"), "text", "base64", "json", "repeat", "repeat_base64")
	}
	if v := f["delay"]; v != nil {
		r.Delay = d.duration(v, join(field, "delay"))
	}
	if v := f["truncate"]; v != nil {
		r.Truncate = d.boolean(v, join(field, "truncate"))
	}
	if v := f["wait_for"]; v != nil {
		r.WaitFor = d.integer(v, join(field, "wait_for"))
		if r.WaitFor < 2 {
			d.fail(v, join(field, "wait_for"), "want at least 2 requests held at once, not %d", r.WaitFor)
		}
	}
	if v := f["echo"]; v != nil {
		r.Echo = d.str(v, join(field, "echo"))
		if r.Body != nil {
			d.fail(v, join(field, "echo"), "echo makes the body: give echo or body, not both")
		}
	}
	return r
}

// headers reads name → string or [strings].
func (d *decoder) headers(n *yaml.Node, field string) []Header {
	var out []Header
	for _, p := range d.mapping(n, field) {
		out = append(out, d.values(p.key, p.val, join(field, p.key)))
	}
	return out
}

func (d *decoder) values(name string, n *yaml.Node, field string) Header {
	if n.Kind == yaml.SequenceNode {
		return Header{Name: name, Values: d.strings(n, field), Array: true}
	}
	return Header{Name: name, Values: []string{d.str(n, field)}}
}

// body reads a body: a plain string is text; otherwise a mapping with one of kinds.
func (d *decoder) body(n *yaml.Node, field string, kinds ...string) *Body {
	if n.Kind == yaml.ScalarNode {
		return &Body{Kind: "text", Text: d.str(n, field)}
	}
	f := d.fields(n, field, append(kinds, "size")...)
	b := &Body{}
	for _, k := range kinds {
		if f[k] == nil {
			continue
		}
		if b.Kind != "" {
			d.fail(n, field, "give one of %s", strings.Join(kinds, ", "))
			return b
		}
		b.Kind = k
	}
	kf := join(field, b.Kind)
	switch b.Kind {
	case "":
		d.fail(n, field, "want a string, or a mapping with one of %s", strings.Join(kinds, ", "))
	case "text", "repeat":
		b.Text = d.str(f[b.Kind], kf)
	case "base64", "repeat_base64":
		var err error
		if b.Bytes, err = base64.StdEncoding.Strict().DecodeString(d.str(f[b.Kind], kf)); err != nil {
			d.fail(f[b.Kind], kf, "not standard base64: %v", err)
		}
	case "json", "json_contains":
		b.JSON, b.JSONText = d.jsonValue(f[b.Kind], kf)
	}
	repeat := b.Kind == "repeat" || b.Kind == "repeat_base64"
	switch {
	case repeat && f["size"] == nil:
		d.fail(n, field, "%s needs a size in bytes", b.Kind)
	case repeat:
		b.Size = d.integer(f["size"], join(field, "size"))
		if len(b.Text)+len(b.Bytes) == 0 || b.Size <= 0 {
			d.fail(n, field, "%s needs a non-empty unit and a positive size", b.Kind)
		}
	case f["size"] != nil:
		d.fail(f["size"], join(field, "size"), "size goes with repeat or repeat_base64")
	}
	return b
}

func (d *decoder) operation(n *yaml.Node, field string) Operation {
	f := d.fields(n, field, "call", "query", "headers", "body", "read", "expect", "sleep", "concurrent")
	if s := f["sleep"]; s != nil {
		if len(f) != 1 {
			d.fail(n, field, "a sleep operation has only sleep")
		}
		return Operation{Sleep: d.duration(s, join(field, "sleep"))}
	}
	if g := f["concurrent"]; g != nil {
		if len(f) != 1 {
			d.fail(n, field, "a concurrent operation has only concurrent: a list of calls")
		}
		return Operation{Concurrent: d.concurrent(g, join(field, "concurrent"))}
	}
	if f["call"] == nil {
		d.fail(n, field, "an operation is a call (call: METHOD /path), a sleep (sleep: 100ms) or concurrent calls (concurrent: [...])")
		return Operation{}
	}
	return Operation{Call: d.call(n, f, field)}
}

// concurrent reads a group of at least two calls that a driver starts together.
func (d *decoder) concurrent(n *yaml.Node, field string) []*Call {
	var calls []*Call
	for i, item := range d.seq(n, field) {
		cf := fmt.Sprintf("%s[%d]", field, i)
		f := d.fields(item, cf, "call", "query", "headers", "body", "read", "expect")
		if f["call"] == nil {
			d.fail(item, cf, "each entry of concurrent is a call (call: METHOD /path)")
			return calls
		}
		calls = append(calls, d.call(item, f, cf))
	}
	if len(calls) < 2 && d.err == nil {
		d.fail(n, field, "concurrent needs at least two calls")
	}
	return calls
}

// call reads a call operation's fields.
func (d *decoder) call(n *yaml.Node, f map[string]*yaml.Node, field string) *Call {
	c := &Call{Read: "text"}
	c.Method, c.Path = d.methodPath(f["call"], join(field, "call"))
	if q := f["query"]; q != nil {
		c.Query = d.query(q, join(field, "query"))
	}
	if h := f["headers"]; h != nil {
		c.Headers = d.headers(h, join(field, "headers"))
	}
	if b := f["body"]; b != nil {
		c.Body = d.body(b, join(field, "body"), "text", "base64", "json", "repeat", "repeat_base64")
		if c.Body.Kind == "json" {
			if _, ok := c.Body.JSON.(map[string]any); !ok {
				if _, ok := c.Body.JSON.([]any); !ok {
					d.fail(b, join(field, "body.json"), "a JSON request body must be an object or a list (a string would be sent as text)")
				}
			}
		}
	}
	if r := f["read"]; r != nil {
		c.Read = d.str(r, join(field, "read"))
		if c.Read != "text" && c.Read != "bytes" {
			d.fail(r, join(field, "read"), "want text or bytes, not %q", c.Read)
		}
	}
	if f["expect"] == nil {
		d.fail(n, join(field, "expect"), "is required for a call")
		return c
	}
	c.Expect = d.expect(f["expect"], join(field, "expect"))
	return c
}

func (d *decoder) query(n *yaml.Node, field string) *Query {
	if n.Kind == yaml.ScalarNode {
		return &Query{Raw: d.str(n, field), IsRaw: true}
	}
	return &Query{Params: d.headers(n, field)}
}

func (d *decoder) expect(n *yaml.Node, field string) Expect {
	f := d.fields(n, field, "status", "outcome", "ok", "headers", "body")
	e := Expect{Outcome: abi.Forwarded}
	if f["status"] == nil {
		d.fail(n, join(field, "status"), "is required")
		return e
	}
	e.Status = d.integer(f["status"], join(field, "status"))
	if o := f["outcome"]; o != nil {
		e.Outcome = d.str(o, join(field, "outcome"))
		if !outcomes[e.Outcome] {
			d.fail(o, join(field, "outcome"), "%q is not an outcome (forwarded, shed, denied, over_budget, invalid, failed)", e.Outcome)
		}
	}
	e.OK = e.Outcome == abi.Forwarded && e.Status >= 200 && e.Status <= 299
	if o := f["ok"]; o != nil {
		e.OK = d.boolean(o, join(field, "ok"))
	}
	if h := f["headers"]; h != nil {
		e.Headers = d.headerMatches(h, join(field, "headers"))
	}
	if b := f["body"]; b != nil {
		e.Body = d.body(b, join(field, "body"), "text", "base64", "json", "json_contains", "repeat", "repeat_base64")
	}
	return e
}

func (d *decoder) headerMatches(n *yaml.Node, field string) []HeaderMatch {
	var out []HeaderMatch
	for _, p := range d.mapping(n, field) {
		hf := join(field, p.key)
		m := HeaderMatch{Name: http.CanonicalHeaderKey(p.key)}
		switch p.val.Kind {
		case yaml.ScalarNode, yaml.SequenceNode:
			m.Values = d.values(p.key, p.val, hf).Values
		default:
			f := d.fields(p.val, hf, "absent", "present", "between", "contains")
			if len(f) != 1 {
				d.fail(p.val, hf, "give one of absent, present, between or contains")
			}
			if v := f["absent"]; v != nil {
				m.Absent = d.boolean(v, join(hf, "absent"))
			}
			if v := f["present"]; v != nil {
				m.Present = d.boolean(v, join(hf, "present"))
			}
			if v := f["contains"]; v != nil {
				m.Contains = d.str(v, join(hf, "contains"))
			}
			if v := f["between"]; v != nil {
				items := d.seq(v, join(hf, "between"))
				if len(items) != 2 {
					d.fail(v, join(hf, "between"), "want [low, high]")
				} else {
					m.Between = &[2]int{d.integer(items[0], join(hf, "between")), d.integer(items[1], join(hf, "between"))}
				}
			}
		}
		out = append(out, m)
	}
	return out
}

func (d *decoder) traceExpect(n *yaml.Node, field string) TraceExpect {
	var t TraceExpect
	if n.Kind == yaml.ScalarNode {
		t.Outcome = d.str(n, field)
	} else {
		f := d.fields(n, field, "outcome", "status", "upstream_status", "route", "probe", "reason_contains", "min_latency")
		if f["outcome"] == nil {
			d.fail(n, join(field, "outcome"), "is required")
			return t
		}
		t.Outcome = d.str(f["outcome"], join(field, "outcome"))
		if v := f["status"]; v != nil {
			t.Status = d.integer(v, join(field, "status"))
		}
		if v := f["upstream_status"]; v != nil {
			t.UpstreamStatus = d.integer(v, join(field, "upstream_status"))
		}
		if v := f["route"]; v != nil {
			t.Route = d.str(v, join(field, "route"))
		}
		if v := f["probe"]; v != nil {
			t.Probe = d.str(v, join(field, "probe"))
		}
		if v := f["reason_contains"]; v != nil {
			t.ReasonContains = d.str(v, join(field, "reason_contains"))
		}
		if v := f["min_latency"]; v != nil {
			t.MinLatency = d.duration(v, join(field, "min_latency"))
		}
	}
	if !outcomes[t.Outcome] && d.err == nil {
		d.fail(n, field, "%q is not an outcome (forwarded, shed, denied, over_budget, invalid, failed)", t.Outcome)
	}
	return t
}

func (d *decoder) receivedExpect(n *yaml.Node, field string) ReceivedExpect {
	var r ReceivedExpect
	var target string
	var targetNode *yaml.Node
	var f map[string]*yaml.Node
	if n.Kind == yaml.ScalarNode {
		target, targetNode = d.str(n, field), n
	} else {
		f = d.fields(n, field, "request", "query", "raw_query", "headers", "body")
		if f["request"] == nil {
			d.fail(n, join(field, "request"), "is required (\"METHOD /path\")")
			return r
		}
		target, targetNode = d.str(f["request"], join(field, "request")), f["request"]
	}
	m, p, ok := strings.Cut(target, " ")
	if !ok || !methods[m] || !strings.HasPrefix(p, "/") {
		d.fail(targetNode, field, "want \"METHOD /path\" or \"METHOD /path?raw-query\", not %q", target)
	}
	r.Method, r.Path = m, p
	if before, q, found := strings.Cut(p, "?"); found {
		r.Path, r.RawQuery = before, &q
	}
	if f == nil {
		return r
	}
	if v := f["raw_query"]; v != nil {
		if r.RawQuery != nil {
			d.fail(v, join(field, "raw_query"), "the request already has a ?query")
		}
		q := d.str(v, join(field, "raw_query"))
		r.RawQuery = &q
	}
	if v := f["query"]; v != nil {
		if r.RawQuery != nil {
			d.fail(v, join(field, "query"), "give query or raw_query, not both")
		}
		if r.Query = d.query(v, join(field, "query")); r.Query.IsRaw {
			d.fail(v, join(field, "query"), "want a mapping of name → value or [values] (raw_query takes a string)")
		}
	}
	if v := f["headers"]; v != nil {
		r.Headers = d.headerMatches(v, join(field, "headers"))
	}
	if v := f["body"]; v != nil {
		r.Body = d.body(v, join(field, "body"), "text", "base64", "json", "json_contains", "repeat", "repeat_base64")
	}
	return r
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!int", "!!float":
			return "a number (" + n.Value + ")"
		case "!!bool":
			return "a boolean (" + n.Value + ")"
		}
		return strconv.Quote(n.Value)
	}
	return "an alias or document"
}

func join(prefix, field string) string {
	if prefix == "" || prefix == "(top)" {
		return field
	}
	return prefix + "." + field
}
