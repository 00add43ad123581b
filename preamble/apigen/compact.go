package apigen

import (
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// The generated client is data plus one generic builder (runtime.js): per operation one line of
// JSON in a string literal, decoded into a function only when a tool first touches that name
// (api's prototype is a Proxy that looks the name up). Loading the client is then one string
// literal for the engine to read, however many operations the API has; no function, array or
// object per operation is made at load. The search index (one line per operation: name, route,
// group, summary, typed signature, description) and the named types are two more string
// literals, split and tokenised only when a tool first calls api.search or api.describe.

// clientParams is one operation's parameters for the client: a JSON array of [key, in, flags,
// wire name, style] with trailing defaults left out (in: "p" path, "q" query, "h" header; flags:
// 1 required, 2 explode, 4 JSON; the wire name defaults to the key, the style to the location's
// default). Path parameters come first, in the order the template names them, which is how the
// builder matches the template's {slots} to them.
func clientParams(op *Operation) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, p := range op.Params {
		if i > 0 {
			b.WriteByte(',')
		}
		flags := 0
		if p.Required && p.In != "path" {
			flags |= 1
		}
		if p.Explode {
			flags |= 2
		}
		if p.JSON {
			flags |= 4
		}
		wire := ""
		switch p.In {
		case "query":
			wire = percentEncode(p.Name)
		case "header":
			wire = p.Name
		}
		style := p.Style
		if style == map[string]string{"path": "simple", "query": "form", "header": "simple"}[p.In] {
			style = ""
		}
		if wire == p.Key {
			wire = ""
		}
		fields := []string{jsonText(p.Key), `"` + p.In[:1] + `"`, itoa(flags), jsonText(wire), jsonText(style)}
		n := len(fields)
		for n > 3 && fields[n-1] == `""` {
			n--
		}
		if n == 3 && flags == 0 {
			n = 2
		}
		b.WriteString("[" + strings.Join(fields[:n], ",") + "]")
	}
	b.WriteByte(']')
	return b.String()
}

// clientBody is [media type, kind, required, deepObject form fields] as JSON (the last only when
// there are some), or "" for no body.
func clientBody(op *Operation) string {
	if op.Body == nil {
		return ""
	}
	req := "0"
	if op.Body.Required {
		req = "1"
	}
	deep := ""
	if op.Body.Kind == "form" && len(op.Body.DeepFields) > 0 {
		deep = "," + jsonText(op.Body.DeepFields)
	}
	return "[" + jsonText(op.Body.MediaType) + "," + jsonText(op.Body.Kind) + "," + req + deep + "]"
}

// Search data limits: what api.search and api.describe can show of one operation.
const (
	searchMaxDepth = 2   // nested inline objects past this are written "object"
	searchMaxProps = 16  // properties per object before "…"
	maxTypeLine    = 600 // bytes of one named type's shape, cut at a property boundary
)

// cutShape cuts a shape written by the describer to about max bytes at a top-level property
// boundary, and closes it with "…}".
func cutShape(shape string, max int) string {
	depth, last := 0, -1
	for i := 0; i < len(shape) && i < max; i++ {
		switch c := shape[i]; {
		case c == '{' || c == '(' || c == '[':
			depth++
		case c == '}' || c == ')' || c == ']':
			depth--
		case c == '"':
			for i++; i < len(shape) && shape[i] != '"'; i++ {
				if shape[i] == '\\' {
					i++
				}
			}
		case c == ',' && depth == 1:
			last = i
		}
	}
	if last < 0 || !strings.HasPrefix(shape, "{") {
		return "object"
	}
	return shape[:last] + ",…}"
}

// opInfo is what the description, api.search and api.describe know of one operation.
type opInfo struct {
	op  *Operation
	sig string // fn({...}):R, types by name
}

// searchData builds the per-operation signatures and the named types they use, with the
// search limits.
func (s *Spec) searchData() ([]opInfo, []string) {
	d := &describer{maxDepth: searchMaxDepth, maxProps: searchMaxProps,
		names: map[string]string{}, taken: map[string]bool{}, defs: map[string]*openapi3.SchemaRef{}}
	infos := make([]opInfo, len(s.Ops))
	for i, op := range s.Ops {
		infos[i] = opInfo{op: op, sig: d.call(op)}
	}
	return infos, d.typeLines()
}

// typeLines defines every named type queued so far (defining one can queue more), one
// "Name=shape" line each.
func (d *describer) typeLines() []string {
	var lines []string
	for i := 0; i < len(d.order); i++ {
		ref := d.order[i]
		shape := d.inline(d.defs[ref].Value, 1)
		if len(shape) > maxTypeLine {
			shape = cutShape(shape, maxTypeLine)
		}
		lines = append(lines, d.names[ref]+"\t"+shape)
	}
	return lines
}

// Fields of an operation's line in the generated table, separated by tabs.
const opLineFields = "name, method, path, group, summary, signature after the name, parameters, body, description, deprecated"

// opLine is one operation for the client, api.search and api.describe: opLineFields in order,
// trailing empty fields left out.
func opLine(in opInfo) string {
	op := in.op
	dep := ""
	if op.Deprecated {
		dep = "1"
	}
	fields := []string{op.Func, op.Method, op.Path, op.Group, op.Summary, strings.TrimPrefix(in.sig, op.Func),
		clientParams(op), clientBody(op), op.Doc, dep}
	for i, f := range fields {
		fields[i] = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, f)
	}
	n := len(fields)
	for n > 8 && fields[n-1] == "" {
		n--
	}
	return strings.Join(fields[:n], "\t")
}

// groups counts operations per resource group, largest first (then by name).
func (s *Spec) groups() []groupCount {
	count := map[string]int{}
	for _, op := range s.Ops {
		count[op.Group]++
	}
	out := make([]groupCount, 0, len(count))
	for g, n := range count {
		out = append(out, groupCount{g, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].name < out[j].name
	})
	return out
}

type groupCount struct {
	name string
	n    int
}
