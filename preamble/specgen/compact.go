package specgen

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

// clientLine is one operation's client data: [method, pieces, params, body], where a piece is
// literal text or the index of a path parameter, a parameter is [key, in, flags, wire name,
// style] with trailing defaults left out (in: "p" path, "q" query, "h" header; flags: 1
// required, 2 explode, 4 JSON; the wire name defaults to the key, the style to the location's
// default) and body is [media type, kind, required] or 0.
func clientLine(op *Operation) string {
	var b strings.Builder
	b.WriteString(`["` + op.Method + `",[`)
	for i, pc := range op.pieces {
		if i > 0 {
			b.WriteByte(',')
		}
		if pc.param >= 0 {
			b.WriteString(itoa(pc.param))
		} else {
			b.WriteString(jsonText(pc.lit))
		}
	}
	b.WriteString("],[")
	for i, p := range op.Params {
		if i > 0 {
			b.WriteByte(',')
		}
		in := p.In[:1]
		flags := 0
		if p.Required {
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
		style, def := p.Style, map[string]string{"path": "simple", "query": "form", "header": "simple"}[p.In]
		if style == def {
			style = ""
		}
		if wire == p.Key {
			wire = ""
		}
		fields := []string{jsonText(p.Key), `"` + in + `"`, itoa(flags), jsonText(wire), jsonText(style)}
		n := len(fields)
		for n > 3 && fields[n-1] == `""` {
			n--
		}
		if n == 3 && flags == 0 {
			n = 2
		}
		b.WriteString("[" + strings.Join(fields[:n], ",") + "]")
	}
	b.WriteString("],")
	if op.Body == nil {
		b.WriteString("0")
	} else {
		req := "0"
		if op.Body.Required {
			req = "1"
		}
		b.WriteString("[" + jsonText(op.Body.MediaType) + "," + jsonText(op.Body.Kind) + "," + req + "]")
	}
	b.WriteString("]")
	return b.String()
}

// Search data limits: what api.search and api.describe can show of one operation.
const (
	searchMaxDepth = 2  // nested inline objects past this are written "object"
	searchMaxProps = 16 // properties per object before "…"
)

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
		lines = append(lines, d.names[ref]+"="+d.inline(d.defs[ref].Value, 1))
	}
	return lines
}

// indexLine is one operation for api.search and api.describe, fields separated by tabs:
// name, "METHOD /path", group, summary, signature, description, deprecated ("1" or "").
func indexLine(in opInfo) string {
	op := in.op
	dep := ""
	if op.Deprecated {
		dep = "1"
	}
	fields := []string{op.Func, op.Method + " " + op.Path, op.Group, op.Summary, in.sig, op.Doc, dep}
	for i, f := range fields {
		fields[i] = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, f)
	}
	n := len(fields)
	for n > 5 && fields[n-1] == "" {
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
