package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/knadh/koanf/parsers/json"
	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/v2"
)

// ClientsError is a refused clients file: it names the file, the field and the reason, never a
// token.
type ClientsError struct {
	File   string
	Field  string // e.g. "clients[1].token_env"; empty for the whole file
	Reason string
}

func (e *ClientsError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("clients file %s: %s", e.File, e.Reason)
	}
	return fmt.Sprintf("clients file %s: %s: %s", e.File, e.Field, e.Reason)
}

// Client is one authenticated caller and the profiles it may use.
type Client struct {
	Name     string
	Profiles []string // profile names; AllProfiles alone for every one
	// RunsPerMinute and CallsPerMinute are the client's quotas (0: none), enforced per daemon,
	// or fleet-wide with --fleet (quota.go).
	RunsPerMinute  int
	CallsPerMinute int
	digest         [32]byte // sha256 of the token: compared in constant time, never printed
}

// AllProfiles in a client's profiles list grants every profile.
const AllProfiles = "*"

// MinTokenLength refuses tokens short enough to guess.
const MinTokenLength = 16

// May says whether the client may use profile name.
func (c *Client) May(name string) bool {
	return slices.Contains(c.Profiles, AllProfiles) || slices.Contains(c.Profiles, name)
}

// Clients is a validated clients file. POST /admin/reload replaces its list whole.
type Clients struct {
	mu   sync.RWMutex
	list []*Client
}

// all is the current list of clients.
func (cs *Clients) all() []*Client {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	return cs.list
}

// named finds the client called name; nil when there is none (any more).
func (cs *Clients) named(name string) *Client {
	for _, c := range cs.all() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Authenticate finds the client whose token is token. Every client is compared, in constant
// time, so the answer's timing does not tell how much of a token matched or which one.
func (cs *Clients) Authenticate(token string) *Client {
	d := sha256.Sum256([]byte(token))
	var found *Client
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	for _, c := range cs.list {
		if subtle.ConstantTimeCompare(d[:], c.digest[:]) == 1 {
			found = c
		}
	}
	return found
}

var clientParsers = map[string]koanf.Parser{
	".yaml": yaml.Parser(), ".yml": yaml.Parser(), ".toml": toml.Parser(), ".json": json.Parser(),
}

// readClients reads and validates a clients file (YAML, TOML or JSON). It is all or nothing:
// any refused field refuses the file. getenv resolves token_env.
func readClients(path string, getenv func(string) string) (*Clients, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ClientsError{File: path, Reason: errors.Unwrap(err).Error()}
	}
	return parseClients(path, b, getenv)
}

// parseClients validates the clients file content b; path names it in errors, picks the parser
// by its extension and anchors relative token_file paths.
func parseClients(path string, b []byte, getenv func(string) string) (*Clients, error) {
	parser := clientParsers[filepath.Ext(path)]
	if parser == nil {
		return nil, &ClientsError{File: path, Reason: fmt.Sprintf("unknown extension %q: use .yaml, .yml, .toml or .json", filepath.Ext(path))}
	}
	raw, err := parser.Unmarshal(b)
	if err != nil {
		return nil, &ClientsError{File: path, Reason: "does not parse: " + err.Error()}
	}
	d := &clientsDecoder{file: path, getenv: getenv, names: map[string]int{}, tokens: map[[32]byte]string{}}
	cs := d.decode(raw)
	if d.err != nil {
		return nil, d.err
	}
	return cs, nil
}

type clientsDecoder struct {
	file   string
	getenv func(string) string
	err    *ClientsError
	names  map[string]int
	tokens map[[32]byte]string
}

func (d *clientsDecoder) fail(field, format string, args ...any) {
	if d.err == nil {
		d.err = &ClientsError{File: d.file, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
}

func (d *clientsDecoder) decode(raw map[string]any) *Clients {
	if extra := unknownKeys(raw, "clients"); extra != "" {
		d.fail(extra, "unknown field (known: clients)")
	}
	list, ok := raw["clients"].([]any)
	if !ok || len(list) == 0 {
		d.fail("clients", "must be a non-empty list of {name, token_env or token_file, profiles}")
		return nil
	}
	cs := &Clients{}
	for i, item := range list {
		if c := d.client(fmt.Sprintf("clients[%d]", i), item); c != nil {
			cs.list = append(cs.list, c)
		}
	}
	return cs
}

func (d *clientsDecoder) client(field string, v any) *Client {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(field, "must be a mapping with name, token_env or token_file, and profiles")
		return nil
	}
	if extra := unknownKeys(m, "name", "token_env", "token_file", "profiles", "runs_per_minute", "calls_per_minute"); extra != "" {
		d.fail(field+"."+extra, "unknown field (known: name, token_env, token_file, profiles, runs_per_minute, calls_per_minute)")
	}
	c := &Client{Name: d.name(field, m["name"])}
	c.Profiles = d.profiles(field+".profiles", m["profiles"])
	c.RunsPerMinute = d.quota(field+".runs_per_minute", c.Name, m["runs_per_minute"])
	c.CallsPerMinute = d.quota(field+".calls_per_minute", c.Name, m["calls_per_minute"])
	if tok, ok := d.token(field, m); ok {
		c.digest = sha256.Sum256([]byte(tok))
		if other, dup := d.tokens[c.digest]; dup {
			d.fail(field, "has the same token as client %q: each client needs its own", other)
		}
		d.tokens[c.digest] = c.Name
	}
	return c
}

func (d *clientsDecoder) name(field string, v any) string {
	s, ok := v.(string)
	switch {
	case v == nil:
		d.fail(field+".name", "is required")
	case !ok:
		d.fail(field+".name", "must be a string, not %T", v)
	case s == "" || strings.ContainsAny(s, " \t\r\n\"\\"):
		d.fail(field+".name", "%q must be non-empty, without spaces or quotes", s)
	default:
		if prev, dup := d.names[s]; dup {
			d.fail(field+".name", "%q is also clients[%d]'s name", s, prev)
		}
		d.names[s] = len(d.names)
	}
	return s
}

func (d *clientsDecoder) profiles(field string, v any) []string {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		d.fail(field, `must be a non-empty list of profile names, or ["*"] for all`)
		return nil
	}
	var out []string
	for i, item := range list {
		s, ok := item.(string)
		f := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case !ok:
			d.fail(f, "must be a string, not %T", item)
		case s == AllProfiles && len(list) > 1:
			d.fail(f, `"*" grants every profile: give it alone`)
		case s == "" || strings.ContainsAny(s, `/\`) || s == "." || s == "..":
			d.fail(f, "%q is not a profile name (a file base name)", s)
		}
		out = append(out, s)
	}
	return out
}

// maxQuota bounds a quota far above any real one, so a typo of extra digits is refused.
const maxQuota = 1_000_000

// quota reads an optional per-minute quota: absent is none; present, a whole number from 1 to
// maxQuota (YAML and TOML give integers, JSON gives float64).
func (d *clientsDecoder) quota(field, client string, v any) int {
	var n float64
	switch x := v.(type) {
	case nil:
		return 0
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	case float64:
		n = x
	default:
		d.fail(field, "client %q: must be a whole number of %s, not %T", client, quotaUnit(field), v)
		return 0
	}
	if n != float64(int64(n)) || n < 1 || n > maxQuota {
		d.fail(field, "client %q: %v must be a whole number from 1 to %d (leave it out for no quota)", client, v, maxQuota)
		return 0
	}
	return int(n)
}

func quotaUnit(field string) string {
	if strings.HasSuffix(field, "calls_per_minute") {
		return "calls per minute"
	}
	return "runs per minute"
}

// token resolves token_env or token_file; the value is never put in an error.
func (d *clientsDecoder) token(field string, m map[string]any) (string, bool) {
	env, _ := m["token_env"].(string)
	path, _ := m["token_file"].(string)
	if (m["token_env"] != nil) == (m["token_file"] != nil) {
		d.fail(field, "set exactly one of token_env and token_file")
		return "", false
	}
	var tok string
	switch {
	case m["token_env"] != nil && env == "":
		d.fail(field+".token_env", "must be a non-empty string")
		return "", false
	case env != "":
		if tok = d.getenv(env); tok == "" {
			d.fail(field+".token_env", "environment variable %s is not set or empty", env)
			return "", false
		}
		field += ".token_env"
	case path == "":
		d.fail(field+".token_file", "must be a non-empty string")
		return "", false
	default:
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(d.file), path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			d.fail(field+".token_file", "cannot read %s: %v", path, errors.Unwrap(err))
			return "", false
		}
		tok = strings.TrimRight(string(b), "\r\n")
		field += ".token_file"
	}
	if len(tok) < MinTokenLength {
		d.fail(field, "the token is shorter than %d characters: use a long random one", MinTokenLength)
		return "", false
	}
	if strings.ContainsAny(tok, " \t\r\n\x00") {
		d.fail(field, "the token contains whitespace or NUL")
		return "", false
	}
	return tok, true
}

// unknownKeys returns the first key (sorted) of m not in known, or "".
func unknownKeys(m map[string]any, known ...string) string {
	var extra []string
	for k := range m {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return ""
	}
	sort.Strings(extra)
	return extra[0]
}
