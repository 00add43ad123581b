package profiles

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/json"
	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

// ErrNotFound is returned (wrapped) when no profile of the asked name exists.
var ErrNotFound = errors.New("profile not found")

// Error is a refused profile: it names the file, the field and the reason.
type Error struct {
	File   string
	Field  string // dotted path, e.g. "routes[2]" or "limits.memory"; empty for the whole file
	Reason string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("profile %s: %s", e.File, e.Reason)
	}
	return fmt.Sprintf("profile %s: %s: %s", e.File, e.Field, e.Reason)
}

// parsers maps the file extensions a profile may have to their parsers.
var parsers = map[string]koanf.Parser{
	".yaml": yaml.Parser(), ".yml": yaml.Parser(), ".toml": toml.Parser(), ".json": strictJSON{json.Parser()},
}

// strictJSON refuses a key given twice in one object, as the YAML and TOML parsers do. Plain
// encoding/json keeps the last one silently, so `"budget":{"calls":1}` could be overridden by a
// second budget further down the file.
type strictJSON struct{ koanf.Parser }

func (p strictJSON) Unmarshal(b []byte) (map[string]any, error) {
	if err := duplicateKey(stdjson.NewDecoder(bytes.NewReader(b))); err != nil && err != errSyntax {
		return nil, err
	}
	return p.Parser.Unmarshal(b) // reports syntax errors better than the walk would
}

var errSyntax = errors.New("json syntax error")

// duplicateKey walks one JSON value and reports the first key repeated within an object.
func duplicateKey(dec *stdjson.Decoder) error {
	t, err := dec.Token()
	if err != nil {
		return errSyntax
	}
	switch t {
	case stdjson.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return errSyntax
			}
			key, _ := k.(string)
			if seen[key] {
				return fmt.Errorf("json: key %q is given twice in one object", key)
			}
			seen[key] = true
			if err := duplicateKey(dec); err != nil {
				return err
			}
		}
	case stdjson.Delim('['):
		for dec.More() {
			if err := duplicateKey(dec); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return errSyntax
	}
	return nil
}

const maxPreambleBytes = 1 << 20

// Load finds the profile called name in dir (name.yaml, .yml, .toml or .json) and loads it.
func Load(dir, name string) (*Profile, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, fmt.Errorf("profile name %q: must be a plain file base name", name)
	}
	var found []string
	for _, ext := range sortedExts() {
		p := filepath.Join(dir, name+ext)
		if _, err := os.Stat(p); err == nil {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w: no %s.yaml, .yml, .toml or .json in %s", ErrNotFound, name, dir)
	case 1:
		return LoadFile(found[0])
	default:
		return nil, fmt.Errorf("profile %q is ambiguous: %s", name, strings.Join(found, ", "))
	}
}

// LoadDir loads every profile in dir. It returns the good ones and every refusal, joined.
func LoadDir(dir string) ([]*Profile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("profiles directory: %w", err)
	}
	var out []*Profile
	var errs []error
	seen := map[string]string{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || parsers[ext] == nil {
			continue
		}
		p, err := LoadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, dup := seen[p.Name]; dup {
			errs = append(errs, &Error{File: p.File, Reason: fmt.Sprintf("profile name %q is also defined by %s", p.Name, prev)})
			continue
		}
		seen[p.Name] = p.File
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// LoadFile loads and validates one profile file. It is all or nothing.
func LoadFile(path string) (*Profile, error) {
	ext := filepath.Ext(path)
	parser := parsers[ext]
	if parser == nil {
		return nil, &Error{File: path, Reason: fmt.Sprintf("unknown extension %q: use .yaml, .yml, .toml or .json", ext)}
	}
	k := koanf.New("\x00") // keys are never split: fields are read from the raw tree
	if err := k.Load(file.Provider(path), parser); err != nil {
		return nil, &Error{File: path, Reason: err.Error()}
	}
	d := &decoder{file: path}
	p := d.profile(k.Raw())
	if d.err != nil {
		return nil, d.err
	}
	p.File = path
	p.Name = strings.TrimSuffix(filepath.Base(path), ext)
	return p, nil
}

func sortedExts() []string {
	exts := make([]string, 0, len(parsers))
	for e := range parsers {
		exts = append(exts, e)
	}
	sort.Strings(exts)
	return exts
}

// decoder walks the raw tree and keeps the first error, so each field is checked in one place.
type decoder struct {
	file string
	err  *Error
}

func (d *decoder) fail(field, format string, args ...any) {
	if d.err == nil {
		d.err = &Error{File: d.file, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
}

var topFields = []string{"base_url", "credential", "routes", "request_headers", "health_check", "preamble", "preamble_python", "budget", "limits", "description", "concurrency", "approvals", "propagate_trace"}

func (d *decoder) profile(raw map[string]any) *Profile {
	d.unknown("", raw, topFields)
	p := &Profile{Limits: DefaultLimits, Budget: Budget{Calls: DefaultBudgetCalls}}
	p.BaseURL = d.baseURL(raw["base_url"])
	p.Credential = d.credential(raw["credential"])
	p.Routes = d.routes(raw["routes"])
	p.RequestHeaders = d.requestHeaders(raw["request_headers"], p.Credential.Header)
	p.HealthCheck = d.healthCheck(raw["health_check"])
	p.Preamble = d.preamble("preamble", raw["preamble"])
	p.PreamblePython = d.preamble("preamble_python", raw["preamble_python"])
	d.budget(raw["budget"], &p.Budget)
	d.limits(raw["limits"], &p.Limits)
	p.Description, _ = d.str("description", raw["description"], false)
	p.Concurrency = d.concurrency(raw["concurrency"])
	p.Approvals = d.approvals(raw["approvals"], p.Routes, p.Limits.RunTimeout)
	p.PropagateTrace = d.propagateTrace(raw["propagate_trace"])
	return p
}

// unknown refuses fields the format does not have: a typo must not silently drop a limit.
func (d *decoder) unknown(prefix string, m map[string]any, known []string) {
	var extra []string
	for k := range m {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		d.fail(strings.TrimPrefix(prefix+"."+extra[0], "."), "unknown field (known: %s)", strings.Join(known, ", "))
	}
}

func (d *decoder) baseURL(v any) *url.URL {
	s, ok := d.str("base_url", v, true)
	if !ok {
		return nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		d.fail("base_url", "is not a valid URL (not repeated here: it may hold a password)")
	case u.Scheme != "http" && u.Scheme != "https":
		d.fail("base_url", "scheme must be http or https, not %q", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		d.fail("base_url", "has no host")
	case u.User != nil:
		d.fail("base_url", "must not carry userinfo: put the credential under credential")
	case u.RawQuery != "" || u.ForceQuery:
		d.fail("base_url", "must not have a query")
	case u.Fragment != "" || strings.Contains(s, "#"):
		d.fail("base_url", "must not have a fragment")
	case u.Path != "" && u.Path != "/" && checkPattern(strings.TrimSuffix(u.Path, "/")) != nil:
		d.fail("base_url", "path %q is not canonical", u.Path)
	case strings.Contains(u.Path, "*"):
		d.fail("base_url", "path must not contain '*'")
	default:
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawPath = ""
		return u
	}
	return nil
}

func (d *decoder) credential(v any) Credential {
	c := Credential{Header: "Authorization"}
	if v == nil {
		return Credential{}
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.fail("credential", "must be a mapping with header, scheme, and env or file")
		return c
	}
	d.unknown("credential", m, []string{"header", "scheme", "env", "file"})
	if h, ok := d.str("credential.header", m["header"], false); ok && h != "" {
		c.Header = h
	}
	if !IsToken(c.Header) {
		d.fail("credential.header", "%q is not a valid header name", c.Header)
	}
	if framingHeaders[http.CanonicalHeaderKey(c.Header)] {
		d.fail("credential.header", "%q frames or routes the request: the HTTP client drops or misreads it", c.Header)
	}
	c.Scheme, _ = d.str("credential.scheme", m["scheme"], false)
	if c.Scheme != "" && !IsToken(c.Scheme) {
		d.fail("credential.scheme", "%q must be a single token such as Bearer", c.Scheme)
	}
	c.Env, _ = d.str("credential.env", m["env"], false)
	c.File, _ = d.str("credential.file", m["file"], false)
	if (c.Env == "") == (c.File == "") {
		d.fail("credential", "set exactly one of env and file")
	}
	if c.File != "" && !filepath.IsAbs(c.File) {
		c.File = filepath.Join(filepath.Dir(d.file), c.File)
	}
	return c
}

// framingHeaders belong to the HTTP client: it drops a Host or Content-Length set in a header
// map, and the others change how the message is framed or the connection is kept.
var framingHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Keep-Alive": true, "Te": true, "Trailer": true, "Upgrade": true, "Expect": true,
}

func (d *decoder) routes(v any) []Route {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		d.fail("routes", "must be a non-empty list of \"METHOD /path\"")
		return nil
	}
	routes := make([]Route, 0, len(list))
	seen := map[string]bool{}
	for i, item := range list {
		field := fmt.Sprintf("routes[%d]", i)
		s, ok := d.str(field, item, true)
		if !ok {
			continue
		}
		r, err := ParseRoute(s)
		if err != nil {
			d.fail(field, "%v", err)
			continue
		}
		if seen[s] {
			d.fail(field, "%q is listed twice", s)
		}
		seen[s] = true
		routes = append(routes, r)
	}
	return routes
}

// healthCheck enforces seed 000: the probe is a GET of one fixed path.
func (d *decoder) healthCheck(v any) *Route {
	if v == nil {
		return nil
	}
	s, ok := d.str("health_check", v, true)
	if !ok {
		return nil
	}
	if strings.ContainsAny(s, "*{}") {
		d.fail("health_check", "%q must be a concrete path, with no '*' or '{param}'", s)
		return nil
	}
	r, err := ParseRoute(s)
	if err != nil {
		d.fail("health_check", "%v", err)
		return nil
	}
	if r.Method != "GET" {
		d.fail("health_check", "%q must be a GET: the probe only reads", s)
		return nil
	}
	return &r
}

// preamble reads a client library field (preamble, preamble_python): a readable file under the cap.
func (d *decoder) preamble(field string, v any) string {
	s, ok := d.str(field, v, false)
	if !ok || s == "" {
		return ""
	}
	path := s
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(d.file), path)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		d.fail(field, "cannot read %s: %v", path, errors.Unwrap(err))
	case fi.IsDir():
		d.fail(field, "%s is a directory", path)
	case fi.Size() > maxPreambleBytes:
		d.fail(field, "%s is %d bytes, over the %d-byte cap", path, fi.Size(), maxPreambleBytes)
	}
	return path
}

func (d *decoder) budget(v any, b *Budget) {
	if v == nil {
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.fail("budget", "must be a mapping with calls")
		return
	}
	d.unknown("budget", m, []string{"calls"})
	if n, ok := d.count("budget.calls", m["calls"]); ok {
		b.Calls = n
	}
}

func (d *decoder) limits(v any, l *Limits) {
	if v == nil {
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.fail("limits", "must be a mapping")
		return
	}
	d.unknown("limits", m, []string{"run_timeout", "call_timeout", "memory", "max_response_bytes",
		"max_request_bytes", "max_output_bytes", "max_log_bytes", "max_host_calls", "max_inflight"})
	d.duration("limits.run_timeout", m["run_timeout"], &l.RunTimeout)
	d.duration("limits.call_timeout", m["call_timeout"], &l.CallTimeout)
	d.size("limits.memory", m["memory"], &l.Memory, MinMemory, MaxMemory)
	d.size("limits.max_response_bytes", m["max_response_bytes"], &l.MaxResponseBytes, 1, 1<<30)
	d.size("limits.max_request_bytes", m["max_request_bytes"], &l.MaxRequestBytes, 1024, 64<<20)
	d.size("limits.max_output_bytes", m["max_output_bytes"], &l.MaxOutputBytes, 1, 1<<30)
	d.size("limits.max_log_bytes", m["max_log_bytes"], &l.MaxLogBytes, 1, 1<<30)
	if n, ok := d.count("limits.max_host_calls", m["max_host_calls"]); ok {
		if n == 0 {
			d.fail("limits.max_host_calls", "must be at least 1")
		}
		l.MaxHostCalls = n
	}
	if n, ok := d.count("limits.max_inflight", m["max_inflight"]); ok {
		if n < 1 || n > MaxInflightLimit {
			d.fail("limits.max_inflight", "must be from 1 to %d", MaxInflightLimit)
		}
		l.MaxInflight = n
	}
}

// Memory bounds: the JS guest needs at least its 165-page minimum; wasm32 tops out at 4 GiB.
const (
	MinMemory = 16 << 20
	MaxMemory = 4 << 30
)

func (d *decoder) duration(field string, v any, dst *time.Duration) {
	if v == nil {
		return
	}
	s, ok := d.str(field, v, true)
	if !ok {
		return
	}
	dur, err := time.ParseDuration(s)
	if err != nil || dur <= 0 {
		d.fail(field, "%q is not a positive duration such as 30s or 500ms", s)
		return
	}
	*dst = dur
}

func (d *decoder) size(field string, v any, dst *int64, min, max int64) {
	if v == nil {
		return
	}
	n, err := parseSize(v)
	if err != nil {
		d.fail(field, "%v", err)
		return
	}
	if n < min || n > max {
		d.fail(field, "%d bytes is outside %s–%s", n, FormatSize(min), FormatSize(max))
		return
	}
	*dst = n
}

func (d *decoder) count(field string, v any) (int, bool) {
	if v == nil {
		return 0, false
	}
	n, ok := asInt(v)
	if !ok || n < 0 || n > math.MaxInt32 {
		d.fail(field, "must be a non-negative whole number, not %v", v)
		return 0, false
	}
	return int(n), true
}

func (d *decoder) str(field string, v any, required bool) (string, bool) {
	if v == nil {
		if required {
			d.fail(field, "is required")
		}
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		d.fail(field, "must be a string, not %T", v)
		return "", false
	}
	if required && s == "" {
		d.fail(field, "must not be empty")
		return "", false
	}
	return s, true
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case uint64:
		return int64(n), n <= math.MaxInt64
	case float64:
		return int64(n), n == math.Trunc(n) && math.Abs(n) < 1<<53
	}
	return 0, false
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// parseSize reads a byte count: a whole number, or one with B, KiB, MiB or GiB.
func parseSize(v any) (int64, error) {
	if n, ok := asInt(v); ok {
		return n, nil
	}
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("must be a size such as 8MiB, not %v", v)
	}
	for _, u := range sizeUnits {
		if num, found := strings.CutSuffix(s, u.suffix); found {
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n < 0 || n > math.MaxInt64/u.mult {
				break
			}
			return n * u.mult, nil
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("%q is not a size such as 8MiB, 512KiB or 1048576", s)
}

// FormatSize prints a byte count in the largest exact binary unit.
func FormatSize(n int64) string {
	for _, u := range sizeUnits {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
