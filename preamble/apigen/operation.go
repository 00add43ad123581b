package apigen

import (
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/plimsoll/plimsoll/profiles"
)

// parseTemplate splits a path template into literal text and {parameter} slots, and checks that
// the literal text is what the broker's canonical-path rule accepts, so every path the preamble
// builds from it can be canonical. The slots' param fields index names, the template's parameter
// names in order of first appearance. bad says what is wrong, or is "".
func parseTemplate(path string) (pieces []piece, names []string, bad string) {
	if !strings.HasPrefix(path, "/") {
		return nil, nil, "the path does not start with '/'"
	}
	if path == "/" {
		return []piece{{lit: "/", param: -1}}, nil, ""
	}
	index := map[string]int{}
	for _, seg := range strings.Split(path[1:], "/") {
		if seg == "" {
			return nil, nil, "the path has an empty segment ('//' or a trailing '/'), which the broker refuses"
		}
		if seg == "." || seg == ".." {
			return nil, nil, "the path has a '.' or '..' segment, which the broker refuses"
		}
		pieces = appendLit(pieces, "/")
		rest := seg
		for rest != "" {
			open := strings.IndexByte(rest, '{')
			lit := rest
			if open >= 0 {
				lit = rest[:open]
			}
			if msg := checkLiteral(lit); msg != "" {
				return nil, nil, msg
			}
			pieces = appendLit(pieces, lit)
			if open < 0 {
				break
			}
			end := strings.IndexByte(rest[open:], '}')
			if end < 0 {
				return nil, nil, "the path has an unbalanced '{'"
			}
			name := rest[open+1 : open+end]
			if name == "" || strings.ContainsAny(name, "{/") {
				return nil, nil, "the path has an empty or malformed {parameter}"
			}
			i, ok := index[name]
			if !ok {
				i = len(names)
				index[name] = i
				names = append(names, name)
			}
			pieces = append(pieces, piece{param: i})
			rest = rest[open+end+1:]
		}
	}
	return pieces, names, ""
}

func appendLit(pieces []piece, lit string) []piece {
	if lit == "" {
		return pieces
	}
	if n := len(pieces); n > 0 && pieces[n-1].param < 0 {
		pieces[n-1].lit += lit
		return pieces
	}
	return append(pieces, piece{lit: lit, param: -1})
}

// checkLiteral accepts the literal text of a path: printable ASCII without '\', ';', '?', '#',
// '%' (the broker refuses these, and the preamble does not re-encode literal text), '*' (the
// route wildcard) or a stray '}'.
func checkLiteral(lit string) string {
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		if c <= 0x20 || c >= 0x7f || strings.IndexByte(`\;?#%*}`, c) >= 0 {
			return "the path has a character the broker refuses or a route cannot express (printable ASCII only, without \\ ; ? # % * or space)"
		}
	}
	return ""
}

// route writes the profile route for an operation: every segment that holds a parameter
// becomes '*', which matches exactly one non-empty segment.
func route(method, path string) string {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if strings.Contains(seg, "{") {
			segs[i] = "*"
		}
	}
	return method + " " + strings.Join(segs, "/")
}

// ignoredHeaders are header parameters OpenAPI says to ignore (they are set another way).
var ignoredHeaders = map[string]bool{"accept": true, "content-type": true, "authorization": true}

// refusedHeader reports whether the broker refuses a guest-set header of this name
// (ARCHITECTURE.md, "Guest paths: canonical only"; preamble/ABI.md).
func refusedHeader(name string, credential map[string]bool) bool {
	n := strings.ToLower(name)
	switch n {
	case "proxy-authorization", "cookie", "host", "forwarded", "connection", "keep-alive", "te",
		"trailer", "transfer-encoding", "upgrade", "content-length":
		return true
	}
	return strings.HasPrefix(n, "x-forwarded-") || strings.HasPrefix(n, "proxy-") || credential[n]
}

// newOperation builds one Operation, or returns nil and the reason it must be skipped.
// credential holds the lower-cased header names the profile's credential may use.
func newOperation(item *openapi3.PathItem, op *openapi3.Operation, method, path string, credential map[string]bool) (*Operation, string) {
	pieces, tmplNames, bad := parseTemplate(path)
	if bad != "" {
		return nil, bad
	}
	o := &Operation{
		Method:     method,
		Path:       path,
		Route:      route(method, path),
		ID:         op.OperationID,
		Summary:    summaryOf(op),
		Group:      groupOf(op, path),
		Deprecated: op.Deprecated,
		pieces:     pieces,
		op:         op,
	}

	// Operation parameters override path-item parameters of the same name and location.
	type nameIn struct{ name, in string }
	declared := map[nameIn]*openapi3.Parameter{}
	var order []nameIn
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range list {
			if ref == nil || ref.Value == nil {
				continue
			}
			k := nameIn{ref.Value.Name, ref.Value.In}
			if _, seen := declared[k]; !seen {
				order = append(order, k)
			}
			declared[k] = ref.Value
		}
	}

	for _, name := range tmplNames {
		p := &Param{Name: name, In: "path", Required: true, Style: "simple"}
		if d := declared[nameIn{name, "path"}]; d != nil {
			fillParam(p, d)
			p.Required = true // a path parameter is always required
		}
		switch p.Style {
		case "simple", "label":
		default:
			return nil, "path parameter " + quoteForMessage(name) + " uses style " + quoteForMessage(p.Style) + "; only simple and label can be sent through the broker"
		}
		o.Params = append(o.Params, p)
	}
	for _, in := range []string{"query", "header", "cookie"} {
		for _, k := range order {
			if k.in != in {
				continue
			}
			d := declared[k]
			switch {
			case in == "cookie":
				o.noteList = append(o.noteList, "cookie parameter "+quoteForMessage(k.name)+" left out: the broker refuses a guest-set Cookie header")
				continue
			case in == "header" && ignoredHeaders[strings.ToLower(k.name)]:
				continue
			case in == "header" && !profiles.IsToken(k.name):
				o.noteList = append(o.noteList, "header parameter "+quoteForMessage(k.name)+" left out: not a valid header name")
				continue
			case in == "header" && refusedHeader(k.name, credential):
				o.noteList = append(o.noteList, "header parameter "+quoteForMessage(k.name)+" left out: the broker refuses it from a guest")
				continue
			}
			p := &Param{Name: k.name, In: in}
			fillParam(p, d)
			if in == "query" {
				switch p.Style {
				case "form", "spaceDelimited", "pipeDelimited", "deepObject":
				default:
					o.noteList = append(o.noteList, "query parameter "+quoteForMessage(k.name)+" has style "+quoteForMessage(p.Style)+"; sent as form")
					p.Style = "form"
				}
			}
			o.Params = append(o.Params, p)
		}
	}

	o.Doc = docOf(op, o.Summary)
	if rb := op.RequestBody; rb != nil && rb.Value != nil && len(rb.Value.Content) > 0 {
		if method == "GET" || method == "HEAD" {
			// A GET or HEAD carries no body through the broker's client; the document's is ignored.
			o.noteList = append(o.noteList, "request body left out: a "+method+" takes no body")
		} else {
			o.Body = chooseBody(rb.Value)
		}
	}

	// "body" is the request body's key; "__proto__" cannot be an own property of an object literal.
	taken := map[string]bool{"body": true, "__proto__": true}
	for _, p := range o.Params {
		key := p.Name
		if taken[key] {
			key = p.In + "_" + p.Name
		}
		for n := 2; taken[key]; n++ {
			key = p.In + "_" + p.Name + itoa(n)
		}
		taken[key] = true
		p.Key = key
	}
	return o, ""
}

// fillParam copies what the generator needs from a declared parameter.
func fillParam(p *Param, d *openapi3.Parameter) {
	p.Required = d.Required
	p.Schema = d.Schema
	if sm, err := d.SerializationMethod(); err == nil {
		p.Style, p.Explode = sm.Style, sm.Explode
	}
	if len(d.Content) > 0 {
		p.JSON = true
		if _, media := pickMedia(d.Content); media != nil {
			p.Schema = media.Schema
		}
	}
}

// isJSONMedia reports whether a media type is JSON: application/json or any */*+json.
func isJSONMedia(mt string) bool {
	mt = strings.ToLower(strings.TrimSpace(strings.SplitN(mt, ";", 2)[0]))
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "/json")
}

// pickMedia picks the media type a client should use from a content map: JSON first, then
// form, then text, then the first by name.
func pickMedia(content openapi3.Content) (string, *openapi3.MediaType) {
	keys := make([]string, 0, len(content))
	for k := range content {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rank := func(mt string) int {
		l := strings.ToLower(mt)
		switch {
		case l == "application/json":
			return 0
		case isJSONMedia(l):
			return 1
		case strings.HasPrefix(l, "application/x-www-form-urlencoded"):
			return 2
		case strings.HasPrefix(l, "text/"):
			return 3
		}
		return 4
	}
	sort.SliceStable(keys, func(i, j int) bool { return rank(keys[i]) < rank(keys[j]) })
	if len(keys) == 0 {
		return "", nil
	}
	return keys[0], content[keys[0]]
}

func chooseBody(rb *openapi3.RequestBody) *Body {
	mt, media := pickMedia(rb.Content)
	b := &Body{Required: rb.Required, MediaType: mt, Kind: "raw"}
	if media != nil {
		b.Schema = media.Schema
		for name, enc := range media.Encoding {
			if enc != nil && enc.Style == "deepObject" {
				b.DeepFields = append(b.DeepFields, name)
			}
		}
		sort.Strings(b.DeepFields)
	}
	l := strings.ToLower(mt)
	switch {
	case isJSONMedia(l):
		b.Kind = "json"
	case strings.HasPrefix(l, "application/x-www-form-urlencoded"):
		b.Kind = "form"
	case strings.HasPrefix(l, "text/"):
		b.Kind = "text"
	}
	if strings.Contains(mt, "*") || !isHeaderValue(mt) {
		b.MediaType = "application/octet-stream"
		if b.Kind == "json" {
			b.MediaType = "application/json"
		}
	}
	return b
}

func isHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return s != ""
}

// summaryOf gives one line for an operation: its summary, or the first paragraph of its
// description.
func summaryOf(op *openapi3.Operation) string {
	text := op.Summary
	if strings.TrimSpace(plainText(text)) == "" {
		text, _, _ = strings.Cut(strings.TrimSpace(op.Description), "\n\n")
		if p, _, ok := strings.Cut(text, "</p>"); ok && strings.TrimSpace(plainText(p)) != "" {
			text = p // Stripe writes <p>one sentence</p><p>more</p> on one line
		}
	}
	return prose(text, 100)
}

// docOf gives the operation's description as plain text, cut short, when it says more than the
// summary: for api.describe.
func docOf(op *openapi3.Operation, summary string) string {
	d := prose(op.Description, 100)
	if d == "" || strings.HasPrefix(d, strings.TrimSuffix(summary, "…")) && len(d) <= len(summary)+2 {
		return ""
	}
	return d
}

// groupOf names the resource group an operation belongs to: its first tag, or else the first
// literal path segment that is not a version ("v1") or "api".
func groupOf(op *openapi3.Operation, path string) string {
	if len(op.Tags) > 0 {
		if g := strings.ToLower(identWordsSep(op.Tags[0])); g != "" {
			return g
		}
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || strings.Contains(seg, "{") || seg == "api" || len(seg) <= 3 && seg[0] == 'v' && strings.Trim(seg[1:], "0123456789") == "" && len(seg) > 1 {
			continue
		}
		if g := strings.ToLower(identWordsSep(seg)); g != "" {
			return g
		}
	}
	return "other"
}

// identWordsSep keeps ASCII letters, digits and '-', turning every other run into one '-'.
func identWordsSep(s string) string {
	var b strings.Builder
	dash := false
	for i := 0; i < len(s) && b.Len() < 40; i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteByte(c)
			continue
		}
		dash = true
	}
	return b.String()
}

// quoteForMessage quotes document text for an error or warning line.
func quoteForMessage(s string) string { return `"` + commentSafe(s) + `"` }
