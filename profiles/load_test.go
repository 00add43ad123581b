package profiles_test

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/profiles"
)

// write puts content at dir/name and returns the full path.
func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// The same profile in the three formats a profile may be written in.
const (
	petstoreYAML = `
base_url: http://127.0.0.1:8080/v1
credential:
  header: x-api-key
  scheme: Token
  file: secrets/petstore.token
routes:
  - GET /pets
  - GET /pets/*
  - POST /pets
health_check: GET /status
preamble: js/petstore.preamble.js
budget:
  calls: 7
limits:
  call_timeout: 5s
  memory: 64MiB
  max_response_bytes: 1048576
  max_host_calls: 50
`
	petstoreTOML = `
base_url = "http://127.0.0.1:8080/v1"
routes = ["GET /pets", "GET /pets/*", "POST /pets"]
health_check = "GET /status"
preamble = "js/petstore.preamble.js"

[credential]
header = "x-api-key"
scheme = "Token"
file = "secrets/petstore.token"

[budget]
calls = 7

[limits]
call_timeout = "5s"
memory = "64MiB"
max_response_bytes = 1048576
max_host_calls = 50
`
	petstoreJSON = `{
  "base_url": "http://127.0.0.1:8080/v1",
  "credential": {"header": "x-api-key", "scheme": "Token", "file": "secrets/petstore.token"},
  "routes": ["GET /pets", "GET /pets/*", "POST /pets"],
  "health_check": "GET /status",
  "preamble": "js/petstore.preamble.js",
  "budget": {"calls": 7},
  "limits": {"call_timeout": "5s", "memory": "64MiB", "max_response_bytes": 1048576, "max_host_calls": 50}
}`
)

func mustRoute(t *testing.T, s string) profiles.Route {
	t.Helper()
	r, err := profiles.ParseRoute(s)
	require.NoError(t, err)
	return r
}

func TestLoadSameProfileInEveryFormat(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "js/petstore.preamble.js", "// generated\n")
	files := map[string]string{
		"petstore.yaml": petstoreYAML,
		"petstore.toml": petstoreTOML,
		"petstore.json": petstoreJSON,
	}
	health := mustRoute(t, "GET /status")
	want := profiles.Profile{
		Name: "petstore",
		Credential: profiles.Credential{Header: "x-api-key", Scheme: "Token",
			File: filepath.Join(dir, "secrets", "petstore.token")},
		Routes:      []profiles.Route{mustRoute(t, "GET /pets"), mustRoute(t, "GET /pets/*"), mustRoute(t, "POST /pets")},
		HealthCheck: &health,
		Preamble:    filepath.Join(dir, "js", "petstore.preamble.js"),
		Budget:      profiles.Budget{Calls: 7},
		Limits: profiles.Limits{
			RunTimeout:       profiles.DefaultLimits.RunTimeout,
			CallTimeout:      5 * time.Second,
			Memory:           64 << 20,
			MaxResponseBytes: 1 << 20,
			MaxRequestBytes:  profiles.DefaultLimits.MaxRequestBytes,
			MaxOutputBytes:   profiles.DefaultLimits.MaxOutputBytes,
			MaxLogBytes:      profiles.DefaultLimits.MaxLogBytes,
			MaxHostCalls:     50,
			MaxInflight:      8, // the default
		},
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			path := write(t, dir, name, content)
			p, err := profiles.LoadFile(path)
			require.NoError(t, err)
			assert.Equal(t, path, p.File)
			require.NotNil(t, p.BaseURL)
			assert.Equal(t, "http://127.0.0.1:8080/v1", p.BaseURL.String())
			got := *p
			got.File, got.BaseURL = "", nil
			assert.Equal(t, want, got)
		})
	}

	// Three files of one name are ambiguous: Load refuses to pick one.
	_, err := profiles.Load(dir, "petstore")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ambiguous")
}

func TestLoadFillsDefaults(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "min.yaml", "base_url: https://api.example.test/\nroutes: [GET /]\n")
	p, err := profiles.Load(dir, "min")
	require.NoError(t, err)
	assert.Equal(t, "min", p.Name)
	assert.Equal(t, profiles.DefaultLimits, p.Limits)
	assert.Equal(t, profiles.DefaultBudgetCalls, p.Budget.Calls)
	assert.Nil(t, p.HealthCheck)
	assert.Empty(t, p.Preamble)
	assert.Equal(t, profiles.Credential{}, p.Credential, "no credential section: nothing is sent")
	assert.Equal(t, "", p.BaseURL.Path, "a trailing '/' on base_url is dropped so paths join cleanly")

	// A credential section without header gets the default header.
	write(t, dir, "cred.yml", "base_url: http://127.0.0.1:9/v2/\nroutes: [GET /a]\ncredential: {env: TOKEN}\n")
	p, err = profiles.Load(dir, "cred")
	require.NoError(t, err)
	assert.Equal(t, profiles.Credential{Header: "Authorization", Env: "TOKEN"}, p.Credential)
	assert.Equal(t, "/v2", p.BaseURL.Path)
}

func TestLoadNames(t *testing.T) {
	dir := t.TempDir()
	_, err := profiles.Load(dir, "absent")
	assert.ErrorIs(t, err, profiles.ErrNotFound)
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "../etc"} {
		_, err := profiles.Load(dir, bad)
		require.Error(t, err, "name %q", bad)
		assert.NotErrorIs(t, err, profiles.ErrNotFound, "name %q", bad)
	}
	path := write(t, dir, "p.ini", "x")
	_, err = profiles.LoadFile(path)
	var pe *profiles.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, path, pe.File)
	assert.Contains(t, pe.Reason, `unknown extension ".ini"`)
}

func TestCredentialFileAbsoluteStays(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(t.TempDir(), "tok")
	path := write(t, dir, "p.yaml", "base_url: http://127.0.0.1/\nroutes: [GET /a]\ncredential: {file: "+abs+"}\n")
	p, err := profiles.LoadFile(path)
	require.NoError(t, err)
	assert.Equal(t, abs, p.Credential.File)
}

// base is a valid profile as top-level YAML blocks; each refusal case replaces or adds blocks.
var base = map[string]string{
	"base_url":     "base_url: http://127.0.0.1:8080/v1",
	"credential":   "credential:\n  env: TOKEN",
	"routes":       "routes:\n  - GET /pets\n  - GET /pets/*",
	"health_check": "health_check: GET /status",
}

func profileYAML(set map[string]string) string {
	blocks := map[string]string{}
	for k, v := range base {
		blocks[k] = v
	}
	for k, v := range set {
		blocks[k] = v
	}
	keys := make([]string, 0, len(blocks))
	for k := range blocks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if blocks[k] != "" {
			b.WriteString(blocks[k] + "\n")
		}
	}
	return b.String()
}

const limitsKnown = "run_timeout, call_timeout, memory, max_response_bytes, max_request_bytes, max_output_bytes, max_log_bytes, max_host_calls, max_inflight"

func TestLoadRefusals(t *testing.T) {
	cases := []struct {
		name   string
		set    map[string]string // "" deletes a block
		field  string
		reason string // exact, with DIR standing for the profile's directory
	}{
		{"unknown top-level field", map[string]string{"zz": "budgets:\n  calls: 1"},
			"budgets", "unknown field (known: base_url, credential, routes, request_headers, health_check, preamble, preamble_python, budget, limits, description, concurrency, approvals, propagate_trace)"},
		{"unknown credential field", map[string]string{"credential": "credential:\n  env: TOKEN\n  token: hunter2"},
			"credential.token", "unknown field (known: header, scheme, env, file)"},
		{"unknown limits field", map[string]string{"limits": "limits:\n  memroy: 64MiB"},
			"limits.memroy", "unknown field (known: " + limitsKnown + ")"},
		{"unknown budget field", map[string]string{"budget": "budget:\n  call: 3"},
			"budget.call", "unknown field (known: calls)"},
		{"dotted key is not a path", map[string]string{"zz": "limits.memory: 64MiB"},
			"limits.memory", "unknown field (known: base_url, credential, routes, request_headers, health_check, preamble, preamble_python, budget, limits, description, concurrency, approvals, propagate_trace)"},

		{"base_url missing", map[string]string{"base_url": ""}, "base_url", "is required"},
		{"base_url empty", map[string]string{"base_url": `base_url: ""`}, "base_url", "must not be empty"},
		{"base_url not a string", map[string]string{"base_url": "base_url: [http://a/]"}, "base_url", "must be a string, not []interface {}"},
		{"base_url userinfo", map[string]string{"base_url": "base_url: http://user:pw@127.0.0.1/"},
			"base_url", "must not carry userinfo: put the credential under credential"},
		{"base_url query", map[string]string{"base_url": "base_url: http://127.0.0.1/v1?key=1"}, "base_url", "must not have a query"},
		{"base_url empty query", map[string]string{"base_url": "base_url: http://127.0.0.1/v1?"}, "base_url", "must not have a query"},
		{"base_url fragment", map[string]string{"base_url": "base_url: 'http://127.0.0.1/v1#top'"}, "base_url", "must not have a fragment"},
		{"base_url empty fragment", map[string]string{"base_url": "base_url: 'http://127.0.0.1/v1#'"}, "base_url", "must not have a fragment"},
		{"base_url ftp", map[string]string{"base_url": "base_url: ftp://127.0.0.1/"}, "base_url", `scheme must be http or https, not "ftp"`},
		{"base_url no scheme", map[string]string{"base_url": "base_url: 127.0.0.1/v1"}, "base_url", `scheme must be http or https, not ""`},
		{"base_url no host", map[string]string{"base_url": "base_url: http:///v1"}, "base_url", "has no host"},
		{"base_url port only", map[string]string{"base_url": "base_url: http://:8080/v1"}, "base_url", "has no host"},
		{"base_url dot-dot path", map[string]string{"base_url": "base_url: http://127.0.0.1/v1/../admin"},
			"base_url", `path "/v1/../admin" is not canonical`},
		{"base_url wildcard path", map[string]string{"base_url": "base_url: http://127.0.0.1/*"}, "base_url", "path must not contain '*'"},

		{"routes missing", map[string]string{"routes": ""}, "routes", `must be a non-empty list of "METHOD /path"`},
		{"routes empty", map[string]string{"routes": "routes: []"}, "routes", `must be a non-empty list of "METHOD /path"`},
		{"routes not a list", map[string]string{"routes": "routes: GET /pets"}, "routes", `must be a non-empty list of "METHOD /path"`},
		{"route not a string", map[string]string{"routes": "routes:\n  - GET /pets\n  - 42"}, "routes[1]", "must be a string, not int"},
		{"route without path", map[string]string{"routes": "routes: [GET]"}, "routes[0]", `"GET" is not "METHOD /path"`},
		{"route bad method", map[string]string{"routes": "routes: [FETCH /pets]"},
			"routes[0]", `"FETCH /pets": method "FETCH" is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS`},
		{"route lower-case method", map[string]string{"routes": "routes: [get /pets]"},
			"routes[0]", `"get /pets": method "get" is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS`},
		{"route CONNECT", map[string]string{"routes": "routes: [CONNECT /pets]"},
			"routes[0]", `"CONNECT /pets": method "CONNECT" is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS`},
		{"route param", map[string]string{"routes": "routes: ['GET /pets/{id}']"},
			"routes[0]", `"GET /pets/{id}": path "/pets/{id}" has a '{param}': write '*' for a path parameter`},
		{"route partial wildcard", map[string]string{"routes": "routes: ['GET /pets/*x']"},
			"routes[0]", `"GET /pets/*x": path "/pets/*x": '*' must be a whole segment`},
		{"route dot-dot", map[string]string{"routes": "routes: [GET /pets/../admin]"},
			"routes[0]", `"GET /pets/../admin": path "/pets/../admin" has a ".." segment`},
		{"route dot", map[string]string{"routes": "routes: [GET /./pets]"},
			"routes[0]", `"GET /./pets": path "/./pets" has a "." segment`},
		{"route double slash", map[string]string{"routes": "routes: [GET //pets]"},
			"routes[0]", `"GET //pets": path "//pets" has an empty segment`},
		{"route trailing slash", map[string]string{"routes": "routes: [GET /pets/]"},
			"routes[0]", `"GET /pets/": path "/pets/" has an empty segment`},
		{"route relative", map[string]string{"routes": "routes: [GET pets]"},
			"routes[0]", `"GET pets": path "pets" must start with '/'`},
		{"route two spaces", map[string]string{"routes": "routes: ['GET  /pets']"},
			"routes[0]", `"GET  /pets": path " /pets" must start with '/'`},
		{"route percent", map[string]string{"routes": "routes: ['GET /a%2fb']"},
			"routes[0]", `"GET /a%2fb": path "/a%2fb" has a character '%' that a canonical path cannot contain`},
		{"route duplicate", map[string]string{"routes": "routes:\n  - GET /pets\n  - POST /pets\n  - GET /pets"},
			"routes[2]", `"GET /pets" is listed twice`},

		{"health_check POST", map[string]string{"health_check": "health_check: POST /status"},
			"health_check", `"POST /status" must be a GET: the probe only reads`},
		{"health_check wildcard", map[string]string{"health_check": "health_check: GET /status/*"},
			"health_check", `"GET /status/*" must be a concrete path, with no '*' or '{param}'`},
		{"health_check param", map[string]string{"health_check": "health_check: 'GET /status/{id}'"},
			"health_check", `"GET /status/{id}" must be a concrete path, with no '*' or '{param}'`},
		{"health_check not a route", map[string]string{"health_check": "health_check: /status"},
			"health_check", `"/status" is not "METHOD /path"`},

		{"credential both env and file", map[string]string{"credential": "credential:\n  env: TOKEN\n  file: tok.txt"},
			"credential", "set exactly one of env and file"},
		{"credential neither", map[string]string{"credential": "credential:\n  header: X-Key"},
			"credential", "set exactly one of env and file"},
		{"credential not a mapping", map[string]string{"credential": "credential: TOKEN"},
			"credential", "must be a mapping with header, scheme, and env or file"},
		{"credential bad header", map[string]string{"credential": "credential:\n  header: X Api Key\n  env: TOKEN"},
			"credential.header", `"X Api Key" is not a valid header name`},
		{"credential header colon", map[string]string{"credential": "credential:\n  header: 'X-Key:'\n  env: TOKEN"},
			"credential.header", `"X-Key:" is not a valid header name`},
		{"credential header Host", map[string]string{"credential": "credential:\n  header: host\n  env: TOKEN"},
			"credential.header", `"host" frames or routes the request: the HTTP client drops or misreads it`},
		{"credential header Content-Length", map[string]string{"credential": "credential:\n  header: Content-Length\n  env: TOKEN"},
			"credential.header", `"Content-Length" frames or routes the request: the HTTP client drops or misreads it`},
		{"credential header Transfer-Encoding", map[string]string{"credential": "credential:\n  header: transfer-encoding\n  env: TOKEN"},
			"credential.header", `"transfer-encoding" frames or routes the request: the HTTP client drops or misreads it`},
		{"credential scheme two words", map[string]string{"credential": "credential:\n  scheme: Bearer token\n  env: TOKEN"},
			"credential.scheme", `"Bearer token" must be a single token such as Bearer`},

		{"duration without unit", map[string]string{"limits": "limits:\n  call_timeout: '10'"},
			"limits.call_timeout", `"10" is not a positive duration such as 30s or 500ms`},
		{"duration zero", map[string]string{"limits": "limits:\n  run_timeout: 0s"},
			"limits.run_timeout", `"0s" is not a positive duration such as 30s or 500ms`},
		{"duration negative", map[string]string{"limits": "limits:\n  run_timeout: -1s"},
			"limits.run_timeout", `"-1s" is not a positive duration such as 30s or 500ms`},
		{"duration a number", map[string]string{"limits": "limits:\n  run_timeout: 30"},
			"limits.run_timeout", "must be a string, not int"},
		{"size unit MB", map[string]string{"limits": "limits:\n  memory: 64MB"},
			"limits.memory", `"64MB" is not a size such as 8MiB, 512KiB or 1048576`},
		{"size fraction", map[string]string{"limits": "limits:\n  max_response_bytes: 1.5MiB"},
			"limits.max_response_bytes", `"1.5MiB" is not a size such as 8MiB, 512KiB or 1048576`},
		{"size float", map[string]string{"limits": "limits:\n  max_response_bytes: 1.5"},
			"limits.max_response_bytes", "must be a size such as 8MiB, not 1.5"},
		{"size zero", map[string]string{"limits": "limits:\n  max_response_bytes: 0"},
			"limits.max_response_bytes", "0 bytes is outside 1B–1GiB"},
		{"size negative", map[string]string{"limits": "limits:\n  max_log_bytes: -5"},
			"limits.max_log_bytes", "-5 bytes is outside 1B–1GiB"},
		{"size overflow", map[string]string{"limits": "limits:\n  max_output_bytes: 9999999999GiB"},
			"limits.max_output_bytes", `"9999999999GiB" is not a size such as 8MiB, 512KiB or 1048576`},
		{"memory below minimum", map[string]string{"limits": "limits:\n  memory: 8MiB"},
			"limits.memory", "8388608 bytes is outside 16MiB–4GiB"},
		{"memory above maximum", map[string]string{"limits": "limits:\n  memory: 5GiB"},
			"limits.memory", "5368709120 bytes is outside 16MiB–4GiB"},
		{"request cap below 1KiB", map[string]string{"limits": "limits:\n  max_request_bytes: 100"},
			"limits.max_request_bytes", "100 bytes is outside 1KiB–64MiB"},
		{"max_inflight zero", map[string]string{"limits": "limits:\n  max_inflight: 0"},
			"limits.max_inflight", "must be from 1 to 64"},
		{"max_inflight over 64", map[string]string{"limits": "limits:\n  max_inflight: 65"},
			"limits.max_inflight", "must be from 1 to 64"},
		{"max_host_calls zero", map[string]string{"limits": "limits:\n  max_host_calls: 0"},
			"limits.max_host_calls", "must be at least 1"},
		{"max_host_calls negative", map[string]string{"limits": "limits:\n  max_host_calls: -1"},
			"limits.max_host_calls", "must be a non-negative whole number, not -1"},
		{"limits not a mapping", map[string]string{"limits": "limits: [1]"}, "limits", "must be a mapping"},
		{"budget negative", map[string]string{"budget": "budget:\n  calls: -1"},
			"budget.calls", "must be a non-negative whole number, not -1"},
		{"budget fraction", map[string]string{"budget": "budget:\n  calls: 2.5"},
			"budget.calls", "must be a non-negative whole number, not 2.5"},
		{"budget string", map[string]string{"budget": "budget:\n  calls: '10'"},
			"budget.calls", "must be a non-negative whole number, not 10"},
		{"budget huge", map[string]string{"budget": "budget:\n  calls: 4294967296"},
			"budget.calls", "must be a non-negative whole number, not 4294967296"},

		{"preamble missing", map[string]string{"preamble": "preamble: missing.preamble.js"},
			"preamble", "cannot read DIR/missing.preamble.js: no such file or directory"},
		{"preamble is a directory", map[string]string{"preamble": "preamble: ."},
			"preamble", "DIR is a directory"},
		{"preamble_python missing", map[string]string{"preamble_python": "preamble_python: missing.py"},
			"preamble_python", "cannot read DIR/missing.py: no such file or directory"},
		{"preamble_python is a directory", map[string]string{"preamble_python": "preamble_python: ."},
			"preamble_python", "DIR is a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := write(t, dir, "p.yaml", profileYAML(tc.set))
			p, err := profiles.LoadFile(path)
			assert.Nil(t, p, "loading is all or nothing")
			var pe *profiles.Error
			require.ErrorAs(t, err, &pe)
			want := profiles.Error{File: path, Field: tc.field, Reason: strings.ReplaceAll(tc.reason, "DIR", dir)}
			assert.Equal(t, want, *pe)
			assert.Equal(t, "profile "+path+": "+tc.field+": "+want.Reason, err.Error())
			assert.NotContains(t, err.Error(), "hunter2")
			assert.NotContains(t, err.Error(), "pw@")
		})
	}
}

func TestLoadRefusesDuplicateKeysInEveryFormat(t *testing.T) {
	files := map[string]string{
		"dup.yaml":       "base_url: http://127.0.0.1/\nroutes: [GET /a]\nbudget:\n  calls: 1\nbudget:\n  calls: 1000\n",
		"dup.toml":       "base_url = \"http://127.0.0.1/\"\nroutes = [\"GET /a\"]\n[budget]\ncalls = 1\ncalls = 1000\n",
		"dup.json":       `{"base_url":"http://127.0.0.1/","routes":["GET /a"],"budget":{"calls":1},"budget":{"calls":1000}}`,
		"dupnested.json": `{"base_url":"http://127.0.0.1/","routes":["GET /a"],"budget":{"calls":1,"calls":1000}}`,
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			path := write(t, t.TempDir(), name, content)
			p, err := profiles.LoadFile(path)
			assert.Nil(t, p)
			var pe *profiles.Error
			require.ErrorAs(t, err, &pe, "a key given twice must not silently take the last value")
			assert.Equal(t, path, pe.File)
			assert.Regexp(t, `budget|calls`, pe.Reason, "the reason names the key")
		})
	}
}

func TestLoadSyntaxErrorNamesFile(t *testing.T) {
	for name, content := range map[string]string{
		"a.yaml": "base_url: [\n", "a.toml": "base_url = \n", "a.json": `{"base_url":`,
		"b.json": `{"routes":["GET /a" "GET /b"]}`, "c.json": `{"a":1 "a":2}`, "d.json": `[1,2]`,
		"e.json": `{"a":{"b":[{"c":1},{"c":1,]}}}`,
	} {
		path := write(t, t.TempDir(), name, content)
		_, err := profiles.LoadFile(path)
		var pe *profiles.Error
		require.ErrorAs(t, err, &pe, name)
		assert.Equal(t, path, pe.File)
		assert.NotEmpty(t, pe.Reason)
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "good.yaml", "base_url: http://127.0.0.1/\nroutes: [GET /a]\n")
	write(t, dir, "other.json", `{"base_url":"http://127.0.0.1/","routes":["GET /b"]}`)
	write(t, dir, "third.toml", "base_url = \"http://127.0.0.1/\"\nroutes = [\"GET /c\"]\n")
	bad := []string{
		write(t, dir, "bad-field.yaml", "base_url: http://127.0.0.1/\nroutes: [GET /a]\nbudjet: {calls: 1}\n"),
		write(t, dir, "bad-syntax.toml", "base_url = [\n"),
		write(t, dir, "bad-route.json", `{"base_url":"http://127.0.0.1/","routes":["GET /a/{id}"]}`),
		write(t, dir, "twice.yml", "base_url: http://127.0.0.1/\nroutes: [GET /d]\n"),
	}
	write(t, dir, "twice.yaml", "base_url: http://127.0.0.1/\nroutes: [GET /e]\n")
	write(t, dir, "README.md", "not a profile")
	write(t, dir, "sub.yaml/inner.yaml", "not loaded: directories are skipped")

	got, err := profiles.LoadDir(dir)
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	assert.ElementsMatch(t, []string{"good", "other", "third", "twice"}, names)

	require.Error(t, err)
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "the refusals are joined")
	assert.Len(t, joined.Unwrap(), len(bad), "one refusal per bad file")
	for _, path := range bad {
		assert.Contains(t, err.Error(), path)
	}
	for _, e := range joined.Unwrap() {
		var pe *profiles.Error
		assert.True(t, errors.As(e, &pe), "every refusal is a *profiles.Error: %v", e)
	}

	_, err = profiles.LoadDir(filepath.Join(dir, "absent"))
	assert.Error(t, err)

	empty := t.TempDir()
	got, err = profiles.LoadDir(empty)
	assert.NoError(t, err)
	assert.Empty(t, got)
}

func TestReadPreamble(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "lib/p.js", "export const x = 1;\n")
	path := write(t, dir, "p.yaml", "base_url: http://127.0.0.1/\nroutes: [GET /a]\npreamble: lib/p.js\n")
	p, err := profiles.LoadFile(path)
	require.NoError(t, err)
	src, err := p.ReadPreamble()
	require.NoError(t, err)
	assert.Equal(t, "export const x = 1;\n", src)

	p.Preamble = ""
	src, err = p.ReadPreamble()
	assert.NoError(t, err)
	assert.Empty(t, src)
}
