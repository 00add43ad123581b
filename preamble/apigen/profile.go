package apigen

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/plimsoll/plimsoll/profiles"
)

// PlaceholderBaseURL is written as base_url when the document names no usable absolute server.
const PlaceholderBaseURL = "http://127.0.0.1:8080"

// Routes returns the profile's route list: one "METHOD /path" per operation, every segment
// holding a {parameter} written as '*'. Paths are relative to base_url's path.
func (s *Spec) Routes() []string {
	var out []string
	seen := map[string]bool{}
	for _, op := range s.Ops {
		if !seen[op.Route] {
			seen[op.Route] = true
			out = append(out, op.Route)
		}
	}
	return out
}

// Health returns the health_check line ("GET /status") when exactly one operation is tagged
// x-plimsoll-health-check: true. ok is false when none is. A misused tag gives a
// *HealthTagError; a path merely named /status or /healthz is never used on its own.
func (s *Spec) Health() (line string, ok bool, err error) {
	if s.healthErr != nil {
		return "", false, s.healthErr
	}
	return s.health, s.health != "", nil
}

// BaseURL returns base_url for the profile: servers[0] with its variables' defaults filled in,
// reduced to scheme, host, port and path. When the document has no server, or one that is
// relative or not usable (not http/https, or with userinfo, a query or a fragment), it returns
// PlaceholderBaseURL (keeping a relative server's path) and a note saying why.
func (s *Spec) BaseURL() (base, note string) {
	if len(s.doc.Servers) == 0 || s.doc.Servers[0] == nil {
		return PlaceholderBaseURL, "placeholder: the document names no server; set the API's address"
	}
	srv := s.doc.Servers[0]
	raw := srv.URL
	for name, v := range srv.Variables {
		if v != nil {
			raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
		}
	}
	quoted := `"` + commentSafe(srv.URL) + `"`
	u, err := url.Parse(raw)
	if err != nil || strings.ContainsAny(raw, "{}") {
		return PlaceholderBaseURL, "placeholder: the document's server " + quoted + " is not a URL; set the API's address"
	}
	if !u.IsAbs() && u.Host == "" {
		path := strings.TrimRight(u.EscapedPath(), "/")
		if path != "" && !strings.HasPrefix(path, "/") || u.RawQuery != "" || u.Fragment != "" || !canonicalBasePath(path) {
			path = ""
		}
		return PlaceholderBaseURL + path, "placeholder: the document's server " + quoted + " is relative; set the API's address"
	}
	var why string
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		why = "is not http or https"
	case u.Host == "":
		why = "has no host"
	case u.User != nil:
		why = "has userinfo"
	case u.RawQuery != "" || u.ForceQuery:
		why = "has a query"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		why = "has a fragment"
	case !canonicalBasePath(strings.TrimRight(u.EscapedPath(), "/")):
		why = "has a path the broker would refuse"
	}
	if why != "" {
		return PlaceholderBaseURL, "placeholder: the document's server " + quoted + " " + why + "; set the API's address"
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), ""
}

func canonicalBasePath(p string) bool {
	if p == "" {
		return true
	}
	_, names, bad := parseTemplate(p)
	return bad == "" && len(names) == 0
}

// Credential is how the profile's credential is sent, chosen from the document's
// securitySchemes.
type Credential struct {
	Header string // the header that carries the secret
	Scheme string // optional prefix, e.g. "Bearer"
	Note   string // set when the default was used, saying why
}

// Credential picks the first simple security scheme, looking first at those the document's
// top-level security requires, then at every scheme by name: http bearer gives Authorization
// with scheme Bearer; apiKey in a header gives that header. Anything else gives the default
// Authorization header and a note.
func (s *Spec) Credential() Credential {
	var comps map[string]bool
	var names []string
	add := func(n string) {
		if comps == nil {
			comps = map[string]bool{}
		}
		if !comps[n] {
			comps[n] = true
			names = append(names, n)
		}
	}
	for _, req := range s.doc.Security {
		keys := make([]string, 0, len(req))
		for k := range req {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(k)
		}
	}
	if c := s.doc.Components; c != nil {
		keys := make([]string, 0, len(c.SecuritySchemes))
		for k := range c.SecuritySchemes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(k)
		}
	}
	first := ""
	for _, n := range names {
		if s.doc.Components == nil || s.doc.Components.SecuritySchemes[n] == nil {
			continue
		}
		ref := s.doc.Components.SecuritySchemes[n]
		if ref.Value == nil {
			continue
		}
		ss := ref.Value
		switch {
		case ss.Type == "http" && strings.EqualFold(ss.Scheme, "bearer"):
			return Credential{Header: "Authorization", Scheme: "Bearer"}
		case ss.Type == "apiKey" && ss.In == "header" && profiles.IsToken(ss.Name) && !refusedHeader(ss.Name, nil):
			return Credential{Header: ss.Name}
		}
		if first == "" {
			first = `"` + commentSafe(n) + `" (` + commentSafe(describeScheme(ss.Type, ss.Scheme, ss.In)) + `)`
		}
	}
	if first == "" {
		return Credential{Header: "Authorization", Note: "the document declares no security scheme; Authorization is the default"}
	}
	return Credential{Header: "Authorization", Note: "security scheme " + first + " is not a simple header; check how the API expects the secret"}
}

func describeScheme(typ, scheme, in string) string {
	switch typ {
	case "http":
		return "http " + scheme
	case "apiKey":
		return "apiKey in " + in
	}
	return typ
}

// credentialHeaders returns the lower-cased header names a credential may travel in, which the
// broker refuses from a guest, so the preamble must not take them as parameters.
func (s *Spec) credentialHeaders() map[string]bool {
	h := map[string]bool{"authorization": true}
	if c := s.doc.Components; c != nil {
		for _, ref := range c.SecuritySchemes {
			if ref != nil && ref.Value != nil && ref.Value.Type == "apiKey" && ref.Value.In == "header" {
				h[strings.ToLower(ref.Value.Name)] = true
			}
		}
	}
	return h
}

// Name is the default base name for generated files and for NAME_TOKEN, short and stable
// across versions of the document:
//
//   - info.x-plimsoll-name when the document sets it (and it is a ValidName);
//   - else the API's own domain name from servers[0]: the label before the public suffix, so
//     https://api.github.com gives "github" and https://api.stripe.com/ "stripe" (not for
//     IP addresses, localhost, or example/test/local/invalid names);
//   - else up to three words of info.title, leaving out words that say nothing about which API
//     it is ("API", "REST", "OpenAPI", "spec", "official", "the", a possessive 's): "Sample
//     Store" gives "sample-store";
//   - else the whole title through fileName, or "api".
func (s *Spec) Name() string {
	if s.doc != nil && s.doc.Info != nil {
		if v, ok := s.doc.Info.Extensions["x-plimsoll-name"].(string); ok && ValidName(v) {
			return v
		}
	}
	if s.doc != nil && len(s.doc.Servers) > 0 && s.doc.Servers[0] != nil {
		if n := hostName(s.doc.Servers[0].URL); n != "" {
			return n
		}
	}
	if n := titleName(s.Title); n != "" {
		return n
	}
	return fileName(s.Title)
}

// hostName picks the distinctive label of a server URL's host, or "".
func hostName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || strings.ContainsAny(u.Hostname(), "{}") {
		return ""
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if net.ParseIP(h) != nil {
		return ""
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return ""
	}
	switch labels[len(labels)-1] {
	case "test", "local", "localhost", "invalid", "example", "internal", "lan", "home":
		return ""
	}
	labels = labels[:len(labels)-1] // the top-level domain
	if n := len(labels); n >= 2 {
		switch labels[n-1] { // a second-level public suffix: co.uk, com.au, ...
		case "co", "com", "org", "net", "gov", "ac", "edu", "ne", "or":
			labels = labels[:n-1]
		}
	}
	name := labels[len(labels)-1]
	if name == "example" || !ValidName(name) || len(name) < 2 {
		return ""
	}
	return name
}

// nameFiller are title words that do not tell one API from another.
var nameFiller = map[string]bool{"api": true, "apis": true, "rest": true, "restful": true, "http": true,
	"openapi": true, "swagger": true, "spec": true, "specs": true, "specification": true,
	"official": true, "the": true, "s": true, "extension": true, "extensions": true, "description": true,
	"definition": true, "reference": true, "documentation": true, "docs": true, "service": true,
	"and": true, "with": true, "for": true, "of": true, "a": true, "an": true}

// titleName is up to three telling words of a title, joined by '-'; "" when none.
func titleName(title string) string {
	words := strings.FieldsFunc(strings.ToLower(title), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	})
	var keep []string
	for _, w := range words {
		if w == "" || nameFiller[w] || (len(w) <= 3 && w[0] == 'v' && strings.Trim(w[1:], "0123456789") == "" && len(w) > 1) {
			continue
		}
		keep = append(keep, w)
		if len(keep) == 3 {
			break
		}
	}
	if len(keep) == 0 {
		return ""
	}
	return fileName(strings.Join(keep, " "))
}

func fileName(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= 40 {
				break
			}
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "api"
	}
	return b.String()
}

// ValidName reports whether name is usable as the base of generated file names: it starts with
// a letter or digit and holds only letters, digits, '-' and '_', at most 64 bytes.
func ValidName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) || i > 0 && (c == '-' || c == '_')) {
			return false
		}
	}
	return true
}

// EnvName is the environment variable the profile reads its secret from: NAME_TOKEN, upper
// case, every other character than A-Z and 0-9 as '_'.
func EnvName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(name) {
		if 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	env := b.String()
	if env == "" || isDigit(env[0]) {
		env = "API_" + env
	}
	return env + "_TOKEN"
}

// ProfileOptions shape a generated profile.
type ProfileOptions struct {
	Name     string // base name; sets env NAME_TOKEN. Default: Spec.Name()
	Preamble string // the generated preamble's file, relative to the profile file; "" for none
	Python   string // the generated Python client's file, likewise
	// Description is the tool description's file, relative to the profile file; "" for none.
	// MCP tools (plimsoll-run mcp, /mcp) use its text as the profile's API.
	Description string
}

// Profile writes a complete grant profile in YAML, in the format of ARCHITECTURE.md "Grant
// profiles": base_url, credential, routes, health_check (when tagged), preamble and description
// (when named) and a budget of 100 calls. Choices the document could not settle are explained in comments. A
// misused health tag gives its *HealthTagError.
func (s *Spec) Profile(opts ProfileOptions) ([]byte, error) {
	health, tagged, err := s.Health()
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = s.Name()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Grant profile generated by plimsoll-specgen from \"%s\" %s (OpenAPI %s).\n",
		commentSafe(oneLine(s.Title, 80)), commentSafe(oneLine(s.Version, 20)), commentSafe(s.OpenAPI))
	b.WriteString("# It grants every operation in the document: delete the routes this tool must not call.\n")
	base, note := s.BaseURL()
	if note != "" {
		b.WriteString("# " + note + "\n")
	}
	b.WriteString("base_url: " + yamlScalar(base) + "\n")
	cred := s.Credential()
	if cred.Note != "" {
		b.WriteString("# " + cred.Note + "\n")
	}
	b.WriteString("credential:\n")
	b.WriteString("  header: " + yamlScalar(cred.Header) + "\n")
	if cred.Scheme != "" {
		b.WriteString("  scheme: " + yamlScalar(cred.Scheme) + "\n")
	}
	b.WriteString("  env: " + yamlScalar(EnvName(name)) + "\n")
	b.WriteString("routes:\n")
	for _, r := range s.Routes() {
		b.WriteString("  - " + yamlScalar(r) + "\n")
	}
	if names := s.headerParams(); len(names) > 0 {
		b.WriteString("request_headers: # the header parameters the document declares\n")
		for _, n := range names {
			b.WriteString("  - " + yamlScalar(n) + "\n")
		}
	}
	if tagged {
		b.WriteString("health_check: " + yamlScalar(health) + "\n")
	} else {
		b.WriteString("# no operation is tagged x-plimsoll-health-check: true, so the breaker waits out\n")
		b.WriteString("# every overload window instead of probing for recovery.\n")
	}
	if opts.Preamble != "" {
		b.WriteString("preamble: " + yamlScalar(opts.Preamble) + "\n")
	}
	if opts.Python != "" {
		b.WriteString("preamble_python: " + yamlScalar(opts.Python) + "\n")
	}
	if opts.Description != "" {
		b.WriteString("description: " + yamlScalar(opts.Description) + " # the MCP tool's description of this API\n")
	}
	fmt.Fprintf(&b, "budget:\n  calls: %d\n", profiles.DefaultBudgetCalls)
	return []byte(b.String()), nil
}

// headerParams lists, sorted and once each, the header parameters the generated client may send
// that the broker does not allow by default, so the profile grants them (request_headers).
func (s *Spec) headerParams() []string {
	seen := map[string]bool{}
	for _, h := range profiles.DefaultRequestHeaders {
		seen[profiles.CanonicalUnderscored(h)] = true
	}
	var names []string
	for _, op := range s.Ops {
		for _, p := range op.Params {
			if c := profiles.CanonicalUnderscored(p.Name); p.In == "header" && !seen[c] {
				seen[c] = true
				names = append(names, p.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// yamlScalar writes s as a plain YAML scalar when that is unambiguous, and as a double-quoted
// one (JSON escapes, which YAML accepts) otherwise.
func yamlScalar(s string) string {
	if plainYAML(s) {
		return s
	}
	q, _ := json.Marshal(s) // escapes control characters, U+2028 and U+2029
	return string(q)
}

func plainYAML(s string) bool {
	if s == "" || strings.HasSuffix(s, ":") || strings.HasSuffix(s, " ") || strings.Contains(s, ": ") || strings.Contains(s, " #") {
		return false
	}
	c0 := s[0]
	if !('a' <= c0 && c0 <= 'z' || 'A' <= c0 && c0 <= 'Z' || c0 == '/') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isIdentByte(c) && c != '$' || strings.IndexByte(" /.-*:~()+=,@!;", c) >= 0) {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~":
		return false
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return false
	}
	return true
}
