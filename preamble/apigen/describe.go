package apigen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Limits that keep the description compact on large documents.
const (
	maxInlineDepth = 3  // nested inline objects deeper than this are written "object"
	maxProps       = 24 // properties listed per object before "…"
	maxEnum        = 12 // enum values listed before "…"
)

// FullListingMaxTokens is the largest tool description, in tokens (bytes/4), that lists every
// function; past it, the description is an index and the tool finds functions with api.search.
// It is the index's own budget (IndexMaxTokens) plus one api.search answer (SearchMaxTokens):
// a model that reads a listing this size pays no more than one that reads the index and
// searches once, and it writes the call in one turn. RATIONALE.md "specgen at scale".
const (
	FullListingMaxTokens = IndexMaxTokens + SearchMaxTokens
	IndexMaxTokens       = 1500
	SearchMaxTokens      = 1000
)

// Tokens estimates a text's size in model tokens as bytes/4, the measure the figures use.
func Tokens(s string) int { return (len(s) + 3) / 4 }

// Description returns the tool description an agent's model reads. A small API is listed in
// full: how to write a tool, the calling convention, one line per function (parameters with types
// and required flags, the 2xx JSON shape, a one-line summary) and one line per named type. When
// that listing would pass FullListingMaxTokens, it is an index instead: the convention, how to
// call api.search and api.describe from the tool, and the resource groups with their sizes,
// within IndexMaxTokens. All document text in it is plain text on single lines.
func (s *Spec) Description() string {
	if full := s.fullListing(); Tokens(full) <= FullListingMaxTokens {
		return full
	}
	return s.index()
}

// Listing is the description in full, whatever its size (plimsoll-specgen -emit listing).
func (s *Spec) Listing() string { return s.fullListing() }

const conventionText = "The tool is the body of an async function: `input` is in scope, `await` works, `return` the result (JSON).\n" +
	"Call `await api.fn({...})` with ONE object: path, query and header params by name, request body as `body`. " +
	"It resolves to {status,ok,headers,body,json(),text()}, not throwing on HTTP errors (check ok); " +
	"a missing, unknown or unsafe param throws before the call.\n"

const typesLegend = "Types: int number string bool any; datetime date uuid base64 binary are strings; T[] array; a|b either; {[k]:T} map.\n"

const legendText = "Lines read fn({param:T,optional?:T}):R // summary; R is r.json() on success (none: no JSON). " + typesLegend

const sigLegendText = "sig reads fn({param:T,optional?:T}):R; R is r.json() on success (none: no JSON). " + typesLegend

func (s *Spec) heading(suffix string) string {
	title := oneLine(plainText(s.Title), 80)
	if title == "" {
		title = "API"
	}
	return fmt.Sprintf("%s %s: %d functions on `api`%s.\n", title, oneLine(s.Version, 20), len(s.Ops), suffix)
}

// Listing limits: what one function line and one type line may spend.
const (
	listMaxDepth   = 2   // nested inline objects past this are written "object"
	listMaxProps   = 12  // properties per object before "…"
	listMaxSummary = 60  // runes of summary
	listMaxType    = 320 // bytes of one type's shape
)

func (s *Spec) fullListing() string {
	d := &describer{maxDepth: listMaxDepth, maxProps: listMaxProps, short: true,
		names: map[string]string{}, taken: map[string]bool{}, defs: map[string]*openapi3.SchemaRef{}}
	var fns strings.Builder
	for _, op := range s.Ops {
		fns.WriteString(d.signature(op))
		fns.WriteByte('\n')
	}
	// Defining a type can queue more. Types of identical shape share one line: "A,B={...}".
	var bodies []string
	sameShape := map[string][]string{}
	for i := 0; i < len(d.order); i++ {
		ref := d.order[i]
		body := d.inline(d.defs[ref].Value, 0)
		if len(body) > listMaxType {
			body = cutShape(body, listMaxType)
		}
		if _, seen := sameShape[body]; !seen {
			bodies = append(bodies, body)
		}
		sameShape[body] = append(sameShape[body], d.names[ref])
	}
	var types strings.Builder
	for _, body := range bodies {
		types.WriteString(strings.Join(sameShape[body], ",") + "=" + body + "\n")
	}

	var b strings.Builder
	b.WriteString(s.heading(""))
	b.WriteString(conventionText)
	b.WriteString("e.g. const r = await " + exampleCall(s.exampleOp()) + "; if (!r.ok) return {status: r.status}; return r.json();\n")
	b.WriteString(s.pythonLine(s.exampleOp()))
	b.WriteString(legendText)
	b.WriteString("Functions:\n")
	b.WriteString(fns.String())
	if types.Len() > 0 {
		b.WriteString("Types:\n")
		b.WriteString(types.String())
	}
	return b.String()
}

// index is the description of an API too big to list: how to search it, and its groups.
func (s *Spec) index() string {
	var b strings.Builder
	b.WriteString(s.heading(", too many to list here"))
	b.WriteString(conventionText)
	b.WriteString("Find functions from inside the tool (no API call, synchronous), then call them in the same run or return what you found:\n" +
		"- api.search(text, {limit: 5}) gives {results:[{fn,http,summary,sig}],types:{Name:shape}}: the best matches for words like \"create issue\" or \"list customers\", best first.\n" +
		"- api.describe(fn) gives {fn,http,summary,doc,sig,types}: one function in full, with every type it uses.\n")
	q, op := s.exampleQuery()
	b.WriteString("e.g. return api.search(" + jsonText(q) + "); then const r = await " + exampleCall(op) + "; return r.ok ? r.json() : {status: r.status};\n")
	b.WriteString(s.pythonLine(op))
	b.WriteString(sigLegendText)
	groups := s.groups()
	b.WriteString(fmt.Sprintf("Groups (%d; functions in each, search by these words too):\n", len(groups)))
	budget := IndexMaxTokens*4 - b.Len() - 60
	var line strings.Builder
	for i, g := range groups {
		item := g.name + " " + itoa(g.n)
		if i > 0 {
			item = ", " + item
		}
		if line.Len()+len(item) > budget {
			fmt.Fprintf(&line, ", and %d more groups", len(groups)-i)
			break
		}
		line.WriteString(item)
	}
	b.WriteString(line.String() + "\n")
	return b.String()
}

// exampleQuery is a search the index shows: words from the summary of a short operation in
// the largest group.
func (s *Spec) exampleQuery() (string, *Operation) {
	groups := s.groups()
	for _, op := range s.Ops {
		if op.Group == groups[0].name && op.Summary != "" && len(op.Summary) <= 40 && !op.Deprecated {
			return strings.TrimSuffix(strings.ToLower(op.Summary), "."), op
		}
	}
	return groups[0].name, s.Ops[0]
}

// exampleOp is the first operation that has a required parameter (or the first).
func (s *Spec) exampleOp() *Operation {
	for _, op := range s.Ops {
		if len(op.Params) > 0 && op.Params[0].Required {
			return op
		}
	}
	return s.Ops[0]
}

// pythonLine tells a model how the Python client differs: the same functions, snake_case names
// (api.search and api.describe give them), parameters as keywords.
func (s *Spec) pythonLine(op *Operation) string {
	infos, _ := s.searchData()
	return "Python (language \"python\"): the same functions in snake_case (api.search/api.describe give these names), params as keywords or one dict, e.g. r = await " +
		pythonCall(op, pythonNames(infos)[op]) + "; return r.json() if r.ok else {\"status\": r.status}\n"
}

// pythonCall writes a Python call of op with its required parameters: keywords when every name
// can be one, else one dict.
func pythonCall(op *Operation, name string) string {
	var kw, dict []string
	for _, p := range op.Params {
		if p.Required {
			v := exampleValue(p)
			if v == "true" {
				v = "True"
			}
			kw = append(kw, p.Key+"="+v)
			dict = append(dict, jsonText(p.Key)+": "+v)
		}
	}
	if op.Body != nil && op.Body.Required {
		kw = append(kw, "body={...}")
		dict = append(dict, `"body": {...}`)
	}
	for _, p := range op.Params {
		if p.Required && (!pyIdent.MatchString(p.Key) || pythonReserved[p.Key]) {
			return "api." + name + "({" + strings.Join(dict, ", ") + "})"
		}
	}
	return "api." + name + "(" + strings.Join(kw, ", ") + ")"
}

// pyIdent is a name Python takes as a keyword argument (ASCII; keywords are excluded apart).
var pyIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// exampleValue is a value of p's type for an example call.
func exampleValue(p *Param) string {
	if p.Schema != nil && p.Schema.Value != nil {
		switch t := p.Schema.Value.Type; {
		case t.Includes("integer"), t.Includes("number"):
			return "1"
		case t.Includes("boolean"):
			return "true"
		}
	}
	return `"x"`
}

// exampleCall writes a call of op with its required parameters.
func exampleCall(pick *Operation) string {
	var args []string
	for _, p := range pick.Params {
		if !p.Required {
			continue
		}
		args = append(args, propName(p.Key)+": "+exampleValue(p))
	}
	if pick.Body != nil && pick.Body.Required {
		args = append(args, "body: {...}")
	}
	if len(args) == 0 {
		return "api." + pick.Func + "()"
	}
	return "api." + pick.Func + "({" + strings.Join(args, ", ") + "})"
}

type describer struct {
	maxDepth, maxProps int  // 0 means maxInlineDepth, maxProps
	short              bool // summaries cut to listMaxSummary

	names map[string]string // component schema $ref → name shown
	taken map[string]bool   // names shown so far
	defs  map[string]*openapi3.SchemaRef
	order []string // component schema $refs in order of first use
}

func (d *describer) signature(op *Operation) string {
	var b strings.Builder
	b.WriteString(d.call(op))
	sum := op.Summary
	if restates(sum, op.Func) {
		sum = ""
	}
	if d.short {
		sum = prose(sum, listMaxSummary)
	}
	if op.Deprecated {
		sum = strings.TrimSpace("(deprecated) " + sum)
	}
	if sum != "" {
		b.WriteString(" // " + sum)
	}
	return b.String()
}

// call writes fn({params}):R, without the summary.
func (d *describer) call(op *Operation) string {
	var b strings.Builder
	b.WriteString(op.Func)
	b.WriteByte('(')
	var fields []string
	for _, p := range op.Params {
		fields = append(fields, field(p.Key, p.Required, d.schema(p.Schema, 1)))
	}
	if op.Body != nil {
		t := "string"
		switch op.Body.Kind {
		case "json", "form":
			t = d.schema(op.Body.Schema, 1)
		}
		fields = append(fields, field("body", op.Body.Required, t))
	}
	if len(fields) > 0 {
		b.WriteString("{" + strings.Join(fields, ",") + "}")
	}
	b.WriteByte(')')
	if r := d.result(op); r != "" {
		b.WriteString(":" + r)
	}
	return b.String()
}

func field(name string, required bool, typ string) string {
	if required {
		return propName(name) + ":" + typ
	}
	return propName(name) + "?:" + typ
}

// propName writes a property name bare when it is an identifier, quoted otherwise.
func propName(n string) string {
	ok := n != ""
	for i := 0; i < len(n) && ok; i++ {
		ok = isIdentByte(n[i]) && !(i == 0 && isDigit(n[i]))
	}
	if ok {
		return n
	}
	return jsonText(n)
}

// result describes what r.json() gives for the first 2xx response (or else default): "" when
// that response has no body, "text" or "binary" when it is not JSON.
func (d *describer) result(op *Operation) string {
	if op.op.Responses == nil {
		return ""
	}
	m := op.op.Responses.Map()
	codes := make([]string, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	var pick *openapi3.ResponseRef
	for _, c := range codes {
		if n, err := strconv.Atoi(c); err == nil && n >= 200 && n < 300 {
			pick = m[c]
			break
		}
	}
	if pick == nil {
		pick = m["2XX"]
	}
	if pick == nil {
		pick = m["2xx"]
	}
	if pick == nil {
		pick = m["default"]
	}
	if pick == nil || pick.Value == nil || len(pick.Value.Content) == 0 {
		return ""
	}
	mt, media := pickMedia(pick.Value.Content)
	switch {
	case isJSONMedia(mt):
		if media == nil {
			return "any"
		}
		return d.schema(media.Schema, 0)
	case strings.HasPrefix(strings.ToLower(mt), "text/"):
		return "text"
	}
	return "binary"
}

// named returns the name shown for a $ref to a component schema, queueing its definition.
func (d *describer) named(sr *openapi3.SchemaRef) (string, bool) {
	const marker = "#/components/schemas/"
	i := strings.Index(sr.Ref, marker)
	if i < 0 || strings.Contains(sr.Ref[i+len(marker):], "/") {
		return "", false
	}
	if n, ok := d.names[sr.Ref]; ok {
		return n, true
	}
	raw := strings.NewReplacer("~1", "/", "~0", "~").Replace(sr.Ref[i+len(marker):])
	var b strings.Builder
	for j := 0; j < len(raw) && b.Len() < 60; j++ {
		c := raw[j]
		if isIdentByte(c) && c != '$' || c == '.' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	base := b.String()
	if base == "" || base[0] == '-' || base[0] == '.' || isDigit(base[0]) {
		base = "T" + base
	}
	if reservedNames[base] || base == "any" || base == "int" || base == "number" || base == "string" || base == "bool" {
		base += "_"
	}
	name := base
	for n := 2; d.taken[name]; n++ {
		name = base + itoa(n)
	}
	d.taken[name] = true
	d.names[sr.Ref] = name
	d.defs[sr.Ref] = sr
	d.order = append(d.order, sr.Ref)
	return name, true
}

func (d *describer) schema(sr *openapi3.SchemaRef, depth int) string {
	if sr == nil || sr.Value == nil {
		return "any"
	}
	if n, ok := d.named(sr); ok {
		return n
	}
	return d.inline(sr.Value, depth)
}

// inline writes a schema in the description's TypeScript-like notation.
func (d *describer) inline(s *openapi3.Schema, depth int) string {
	if s.Const != nil {
		return jsonText(s.Const)
	}
	nullable := s.Nullable || s.Type.IncludesNull()
	withNull := func(t string) string {
		if nullable && !strings.HasSuffix(t, "|null") {
			return t + "|null"
		}
		return t
	}
	if len(s.Enum) > 0 {
		var vals []string
		for i, v := range s.Enum {
			if i == maxEnum {
				vals = append(vals, "…")
				break
			}
			vals = append(vals, jsonText(v))
		}
		return withNull(strings.Join(vals, "|"))
	}
	if len(s.AllOf) > 0 {
		var parts []string
		for _, sub := range s.AllOf {
			parts = append(parts, wrap(d.schema(sub, depth), "|"))
		}
		if len(s.Properties) > 0 {
			parts = append(parts, d.object(s, depth))
		}
		if len(parts) == 1 {
			return withNull(parts[0])
		}
		return withNull(strings.Join(parts, "&"))
	}
	if alts := append(append(openapi3.SchemaRefs{}, s.OneOf...), s.AnyOf...); len(alts) > 0 {
		var parts []string
		for _, sub := range alts {
			parts = append(parts, wrap(d.schema(sub, depth), "&"))
		}
		return withNull(strings.Join(parts, "|"))
	}
	types := s.Type.Slice()
	if len(types) == 0 {
		switch {
		case len(s.Properties) > 0 || s.AdditionalProperties.Schema != nil:
			types = []string{"object"}
		case s.Items != nil:
			types = []string{"array"}
		default:
			return withNull("any")
		}
	}
	var parts []string
	for _, t := range types {
		if t != "null" {
			parts = append(parts, d.base(t, s, depth))
		}
	}
	if len(parts) == 0 {
		return "null"
	}
	return withNull(strings.Join(parts, "|"))
}

func (d *describer) base(t string, s *openapi3.Schema, depth int) string {
	switch t {
	case "integer":
		return "int"
	case "number":
		return "number"
	case "boolean":
		return "bool"
	case "string":
		switch s.Format {
		case "date-time":
			return "datetime"
		case "date", "uuid", "binary":
			return s.Format
		case "byte":
			return "base64"
		}
		return "string"
	case "array":
		return wrap(d.schema(s.Items, depth+1), "|&") + "[]"
	case "object":
		return d.object(s, depth)
	}
	return "any"
}

func (d *describer) object(s *openapi3.Schema, depth int) string {
	limit, props := maxInlineDepth, maxProps
	if d.maxDepth > 0 {
		limit = d.maxDepth
	}
	if d.maxProps > 0 {
		props = d.maxProps
	}
	if depth > limit {
		return "object"
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var fields []string
	for i, n := range names {
		if i == props {
			fields = append(fields, "…")
			break
		}
		fields = append(fields, field(n, required[n], d.schema(s.Properties[n], depth+1)))
	}
	switch ap := s.AdditionalProperties; {
	case ap.Schema != nil:
		fields = append(fields, "[k]:"+d.schema(ap.Schema, depth+1))
	case ap.Has != nil && *ap.Has && len(fields) == 0:
		fields = append(fields, "[k]:any")
	}
	if len(fields) == 0 {
		return "object"
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// wrap puts parentheses around t when it contains any of chars at its top level.
func wrap(t, chars string) string {
	depth := 0
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c == '{' || c == '(' || c == '[':
			depth++
		case c == '}' || c == ')' || c == ']':
			depth--
		case c == '"':
			for i++; i < len(t) && t[i] != '"'; i++ {
				if t[i] == '\\' {
					i++
				}
			}
		case depth == 0 && strings.IndexByte(chars, c) >= 0:
			return "(" + t + ")"
		}
	}
	return t
}

// jsonText writes a value as compact JSON without HTML escaping; line and paragraph separators
// and control characters stay escaped, so it never breaks a line.
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "any"
	}
	out := strings.TrimSuffix(buf.String(), "\n")
	if len(out) > 60 {
		buf.Reset()
		if enc.Encode(oneLine(fmt.Sprint(v), 40)) == nil {
			out = strings.TrimSuffix(buf.String(), "\n")
		}
	}
	return out
}

// fillerWords carry no meaning a function name lacks.
var fillerWords = map[string]bool{"a": true, "an": true, "the": true, "one": true, "of": true,
	"for": true, "by": true, "to": true, "in": true, "on": true, "with": true, "and": true,
	"all": true, "given": true, "specific": true, "single": true, "existing": true, "its": true}

// restates reports whether a summary says no more than the function's name ("Get one pet" for
// getPet, "List pets" for listPets), so the description can leave it out.
func restates(summary, fn string) bool {
	name := strings.ToLower(fn)
	words := strings.FieldsFunc(strings.ToLower(summary), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	})
	if len(words) == 0 {
		return false
	}
	for _, w := range words {
		if fillerWords[w] || strings.Contains(name, w) ||
			strings.Contains(name, strings.TrimSuffix(w, "s")) && len(w) > 3 {
			continue
		}
		return false
	}
	return true
}
