package apigen

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// HealthExtension is the operation extension that marks the one readiness route the broker may
// probe while it sheds calls.
const HealthExtension = "x-plimsoll-health-check"

// Spec is one OpenAPI document, read, resolved and checked: the single source for the route
// list, the client preamble, the tool description, the health line and the profile.
type Spec struct {
	Title   string       // info.title
	Version string       // info.version
	OpenAPI string       // the document's openapi field, e.g. "3.1.0"
	Source  string       // the file it was loaded from, "" when parsed from bytes
	Ops     []*Operation // sorted by path, then method
	Skipped []Skip       // operations left out because the broker could never allow them

	doc       *openapi3.T
	health    string   // "GET /status" when exactly one operation is tagged
	healthErr error    // a *HealthTagError when the tag is misused
	docNotes  []string // strict OpenAPI rules the document breaks that do not make the grant or client ambiguous
}

// Operation is one callable operation: one route and one generated function.
type Operation struct {
	Method     string // upper case: GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS
	Path       string // the document's path template, e.g. /pets/{petId}
	Route      string // the profile route: METHOD and path with every {param} segment as '*'
	ID         string // operationId as written, "" when there is none
	Func       string // the function's name on api: a safe, unique identifier
	Summary    string // one line, from summary or else description, as plain text
	Doc        string // the description as plain text, cut short; "" when it adds nothing
	Group      string // resource group: the first tag, or the first literal path segment
	Deprecated bool
	Params     []*Param // path parameters in path order, then query, then header
	Body       *Body    // nil when the operation takes no request body
	Health     bool     // tagged x-plimsoll-health-check: true

	pieces   []piece // the path template: literal text and parameter slots
	op       *openapi3.Operation
	noteList []string // parameters left out, and other remarks for Warnings
}

// Param is one parameter of an Operation, as the generated function takes it.
type Param struct {
	Name     string // the name in the document (sent on the wire)
	Key      string // the property of the call's argument object; Name unless that collides
	In       string // "path", "query" or "header"
	Required bool
	Style    string // OpenAPI serialisation style, defaults filled in
	Explode  bool
	JSON     bool // the parameter uses content: application/json, so it is sent as JSON text
	Schema   *openapi3.SchemaRef
}

// Body is an operation's request body, sent from the argument's body property.
type Body struct {
	Required  bool
	MediaType string // the Content-Type sent
	Kind      string // "json", "form" (application/x-www-form-urlencoded), "text" or "raw"
	// DeepFields are the form fields the document encodes with style deepObject
	// (name[key]=value, name[0]=value), sorted.
	DeepFields []string
	Schema     *openapi3.SchemaRef
}

// Skip records an operation left out of every output, and why.
type Skip struct {
	Op     OpRef
	Reason string
}

func (s Skip) String() string { return "specgen: skipped " + s.Op.String() + ": " + s.Reason }

// piece is one part of a path template: literal text, or (param >= 0) the value of Params[param].
type piece struct {
	lit   string
	param int
}

// methodOrder is the order operations of one path are listed in; these are also the only methods
// the broker's ABI lets a guest use.
var methodOrder = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// Loader reads OpenAPI documents. The zero value is ready to use and resolves only references
// inside the document.
type Loader struct {
	// AllowFileRefs lets $ref name other local files (relative to the document). References to
	// http(s) URLs are never followed.
	AllowFileRefs bool
}

// Load reads and checks the OpenAPI 3.0 or 3.1 document at path (YAML or JSON) with the zero
// Loader. A read failure is returned as the *fs.PathError it is; anything wrong with the
// document is a *DocumentError.
func Load(path string) (*Spec, error) { return Loader{}.Load(path) }

// Parse reads a document from memory with the zero Loader.
func Parse(data []byte) (*Spec, error) { return Loader{}.Parse(data, "") }

// Load reads and checks the document at path.
func (l Loader) Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return l.Parse(data, path)
}

// Parse reads a document from memory. source names it in errors and is where relative file
// references are resolved from; it may be "".
func (l Loader) Parse(data []byte, source string) (*Spec, error) {
	kl := openapi3.NewLoader()
	kl.Context = context.Background()
	if l.AllowFileRefs {
		kl.IsExternalRefsAllowed = true
		kl.ReadFromURIFunc = readLocalFileOnly
	}
	var doc *openapi3.T
	var err error
	if source != "" {
		abs, aerr := filepath.Abs(source)
		if aerr != nil {
			abs = source
		}
		doc, err = kl.LoadFromDataWithPath(data, &url.URL{Path: filepath.ToSlash(abs)})
	} else {
		doc, err = kl.LoadFromData(data)
	}
	name := ""
	if source != "" {
		name = filepath.Base(source)
	}
	if err != nil {
		return nil, &DocumentError{Source: name, Reason: "cannot read the OpenAPI document", Err: err}
	}
	if doc.OpenAPIMajorMinor() == "" {
		return nil, &DocumentError{Source: name, Reason: fmt.Sprintf("openapi version %q is not supported; want 3.0 or 3.1", doc.OpenAPI)}
	}
	opts := []openapi3.ValidationOption{
		openapi3.DisableExamplesValidation(),
		openapi3.DisableSchemaDefaultsValidation(),
		openapi3.DisableSchemaPatternValidation(),
	}
	if doc.IsOpenAPI31OrLater() {
		opts = append(opts, openapi3.IsOpenAPI31OrLater())
	}
	notes, err := validate(kl.Context, doc, opts)
	if err != nil {
		return nil, &DocumentError{Source: name, Reason: "the OpenAPI document is not valid", Err: err}
	}
	s := &Spec{OpenAPI: doc.OpenAPI, Source: source, doc: doc, docNotes: notes}
	if doc.Info != nil {
		s.Title, s.Version = doc.Info.Title, doc.Info.Version
	}
	s.health, s.healthErr = findHealth(doc)
	s.build()
	if err := s.checkAmbiguous(); err != nil {
		var ae *AmbiguousError
		if errors.As(err, &ae) {
			ae.Source = name
		}
		return nil, err
	}
	if len(s.Ops) == 0 {
		return nil, &DocumentError{Source: name, Reason: "the document has no operation plimsoll can call"}
	}
	return s, nil
}

// readLocalFileOnly reads referenced files from the local disk and refuses every other scheme.
func readLocalFileOnly(l *openapi3.Loader, u *url.URL) ([]byte, error) {
	if u.Scheme != "" && u.Scheme != "file" || u.Host != "" {
		return nil, fmt.Errorf("reference %q: only local files may be referenced", u.String())
	}
	return openapi3.ReadFromFile(l, u)
}

// Warnings lists what was left out of the outputs, one line each, for the CLI to print.
func (s *Spec) Warnings() []string {
	w := append([]string(nil), s.docNotes...)
	for _, sk := range s.Skipped {
		w = append(w, sk.String())
	}
	for _, op := range s.Ops {
		for _, note := range op.noteList {
			w = append(w, "specgen: "+OpRef{op.Method, op.Path}.String()+": "+note)
		}
	}
	return w
}

// sortedPaths returns the document's paths in byte order.
func sortedPaths(doc *openapi3.T) []string {
	if doc.Paths == nil {
		return nil
	}
	keys := make([]string, 0, doc.Paths.Len())
	for k := range doc.Paths.Map() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sortedMethods returns a path item's methods: the broker's methods in methodOrder, then any
// others by name.
func sortedMethods(item *openapi3.PathItem) []string {
	ops := item.Operations()
	ms := make([]string, 0, len(ops))
	for m, op := range ops {
		if op != nil {
			ms = append(ms, strings.ToUpper(m))
		}
	}
	sort.Slice(ms, func(i, j int) bool {
		a, b := slices.Index(methodOrder, ms[i]), slices.Index(methodOrder, ms[j])
		if a < 0 {
			a = len(methodOrder)
		}
		if b < 0 {
			b = len(methodOrder)
		}
		if a != b {
			return a < b
		}
		return ms[i] < ms[j]
	})
	return ms
}

func getOp(item *openapi3.PathItem, method string) *openapi3.Operation {
	if op := item.GetOperation(method); op != nil {
		return op
	}
	for m, op := range item.Operations() {
		if strings.ToUpper(m) == method {
			return op
		}
	}
	return nil
}

// findHealth finds the operation tagged x-plimsoll-health-check: true and checks its shape.
func findHealth(doc *openapi3.T) (string, error) {
	var tagged []OpRef
	for _, path := range sortedPaths(doc) {
		item := doc.Paths.Value(path)
		for _, m := range sortedMethods(item) {
			op := getOp(item, m)
			if op == nil {
				continue
			}
			v, ok := op.Extensions[HealthExtension]
			if !ok {
				continue
			}
			on, isBool := v.(bool)
			if !isBool {
				return "", &HealthTagError{Problem: HealthNotBool, Ops: []OpRef{{m, path}}}
			}
			if on {
				tagged = append(tagged, OpRef{m, path})
			}
		}
	}
	switch {
	case len(tagged) == 0:
		return "", nil
	case len(tagged) > 1:
		return "", &HealthTagError{Problem: HealthMultiple, Ops: tagged}
	}
	op := tagged[0]
	if op.Method != "GET" {
		return "", &HealthTagError{Problem: HealthNotGET, Ops: tagged}
	}
	if strings.ContainsAny(op.Path, "{}") {
		return "", &HealthTagError{Problem: HealthPathParams, Ops: tagged}
	}
	if _, _, bad := parseTemplate(op.Path); bad != "" {
		return "", &HealthTagError{Problem: HealthNotCanonical, Ops: tagged}
	}
	return "GET " + op.Path, nil
}

// build turns the document's operations into s.Ops (and s.Skipped), names their functions and
// their parameters' keys.
func (s *Spec) build() {
	names := nameSet{}
	for _, path := range sortedPaths(s.doc) {
		item := s.doc.Paths.Value(path)
		for _, m := range sortedMethods(item) {
			ref := OpRef{m, path}
			if !slices.Contains(methodOrder, m) {
				s.Skipped = append(s.Skipped, Skip{ref, "the broker allows only GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS"})
				continue
			}
			op, reason := newOperation(item, getOp(item, m), m, path, s.credentialHeaders())
			if op == nil {
				s.Skipped = append(s.Skipped, Skip{ref, reason})
				continue
			}
			s.Ops = append(s.Ops, op)
		}
	}
	// Operations with an operationId are named first, so a derived name never takes an
	// operationId's name.
	for pass := 0; pass < 2; pass++ {
		for _, op := range s.Ops {
			if (op.ID != "") != (pass == 0) {
				continue
			}
			src := op.ID
			if identWords(src) == "" {
				src = derivedName(op.Method, op.Path)
			}
			op.Func = names.unique(Ident(src))
		}
	}
	if s.health != "" {
		for _, op := range s.Ops {
			if op.Method+" "+op.Path == s.health {
				op.Health = true
			}
		}
	}
}

// derivedName makes a name from method and path when there is no operationId:
// GET /pets/{petId}/photos gives "get pets by petId photos" (Ident camel-cases it).
func derivedName(method, path string) string {
	words := []string{strings.ToLower(method)}
	for _, seg := range strings.Split(path, "/") {
		if seg == "" {
			continue
		}
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			words = append(words, "by", seg[1:len(seg)-1])
			continue
		}
		words = append(words, seg)
	}
	if len(words) == 1 {
		words = append(words, "root")
	}
	return strings.Join(words, " ")
}

// validate checks the document with kin-openapi, collecting every error. Breaches of strict
// OpenAPI rules that leave the grant and the client unambiguous come back as notes (warnings),
// not errors: two templated paths that differ only in their parameters' names
// ("/a/{id}" and "/a/{name}", which GitHub's description has) are one route pattern, which is
// ambiguous only when both declare the same method, and checkAmbiguous refuses exactly that. The
// path item kin-openapi then skips is validated on its own (its operations, parameters and
// responses); only kin-openapi's check that its template and its declared path parameters agree
// is not run for it, and the generator reads an undeclared path parameter as a string.
func validate(ctx context.Context, doc *openapi3.T, opts []openapi3.ValidationOption) ([]string, error) {
	opts = append(opts, openapi3.EnableMultiError())
	err := doc.Validate(ctx, opts...)
	if err == nil {
		return nil, nil
	}
	var errs []error
	if me, ok := err.(openapi3.MultiError); ok {
		errs = flatten(me)
	} else {
		errs = []error{err}
	}
	var notes []string
	var rest openapi3.MultiError
	for _, e := range errs {
		var cp *openapi3.ConflictingPathsError
		if errors.As(e, &cp) {
			notes = append(notes, "specgen: paths "+quoteForMessage(cp.Path2)+" and "+quoteForMessage(cp.Path1)+
				" differ only in parameter names (a strict OpenAPI rule); kept, as their methods do not collide")
			if item := doc.Paths.Value(cp.Path1); item != nil {
				if verr := item.Validate(openapi3.WithValidationOptions(ctx, opts...), opts...); verr != nil {
					rest = append(rest, fmt.Errorf("paths[%q]: %w", cp.Path1, verr))
				}
			}
			continue
		}
		rest = append(rest, e)
	}
	if len(rest) == 1 {
		return notes, rest[0]
	}
	if len(rest) > 0 {
		return notes, rest
	}
	return notes, nil
}

func flatten(me openapi3.MultiError) []error {
	var out []error
	for _, e := range me {
		if sub, ok := e.(openapi3.MultiError); ok {
			out = append(out, flatten(sub)...)
		} else {
			out = append(out, e)
		}
	}
	return out
}

// checkAmbiguous refuses what would make the grant or the client ambiguous: two operations with
// the same METHOD and the same path template up to parameter names ("GET /a/{id}" and
// "GET /a/{name}"), which are one call described twice. Two templates that differ in literal
// text but share a route pattern ("/compare/{basehead}" and "/compare/{base}...{head}", both
// "/compare/*") are two distinct functions the one grant line covers; they are kept, with a
// warning saying so.
func (s *Spec) checkAmbiguous() error {
	byShape := map[string]*Operation{}
	byRoute := map[string]*Operation{}
	var pairs [][2]OpRef
	for _, op := range s.Ops {
		shape := op.Method + " " + templateShape(op.Path)
		if prev, ok := byShape[shape]; ok {
			pairs = append(pairs, [2]OpRef{{prev.Method, prev.Path}, {op.Method, op.Path}})
			continue
		}
		byShape[shape] = op
		if prev, ok := byRoute[op.Route]; ok {
			s.docNotes = append(s.docNotes, "specgen: "+OpRef{prev.Method, prev.Path}.String()+" and "+
				OpRef{op.Method, op.Path}.String()+" share the grant line \""+op.Route+"\""+
				": granting (or removing) one grants (or removes) both")
			continue
		}
		byRoute[op.Route] = op
	}
	if len(pairs) == 0 {
		return nil
	}
	return &AmbiguousError{Pairs: pairs}
}

// templateShape erases parameter names from a path template: "/a/{id}.json" gives "/a/{}.json".
func templateShape(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		if path[i] == '{' {
			if end := strings.IndexByte(path[i:], '}'); end > 0 {
				b.WriteString("{}")
				i += end
				continue
			}
		}
		b.WriteByte(path[i])
	}
	return b.String()
}
