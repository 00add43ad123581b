package apigen_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/preamble/apigen"
	"github.com/plimsoll/plimsoll/preamble/js"
	"github.com/plimsoll/plimsoll/profiles"
)

// The profile WriteAll emits passes the real profile loader as written, and names the preamble
// written beside it.
func TestEmittedProfileLoads(t *testing.T) {
	for _, file := range []string{"testdata/store.yaml", "testdata/store.json", "testdata/store31.yaml", "testdata/hostile.yaml"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := apigen.Load(file)
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, apigen.WriteAll(s, dir, "api"))
			p, err := profiles.LoadFile(filepath.Join(dir, "api.yaml"))
			require.NoError(t, err)
			require.Equal(t, filepath.Join(dir, "api.preamble.js"), p.Preamble)
			require.Len(t, p.Routes, len(s.Routes()))
			for i, r := range p.Routes {
				require.Equal(t, s.Routes()[i], r.String())
			}
			require.Equal(t, "API_TOKEN", p.Credential.Env)
			require.Equal(t, 100, p.Budget.Calls)
			if line, ok, _ := s.Health(); ok {
				require.NotNil(t, p.HealthCheck)
				require.Equal(t, line, p.HealthCheck.String())
			} else {
				require.Nil(t, p.HealthCheck)
			}
		})
	}
}

func TestPlaceholderProfileLoads(t *testing.T) {
	s, err := apigen.Parse([]byte(`openapi: 3.0.3
info: {title: No Server, version: '1'}
servers: [{url: '/api/v1'}]
components: {securitySchemes: {basic: {type: http, scheme: basic}}}
paths:
  /x/{id}:
    get: {parameters: [{name: id, in: path, required: true, schema: {type: string}}], responses: {'200': {description: ok}}}
`))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, apigen.WriteAll(s, dir, ""))
	p, err := profiles.LoadFile(filepath.Join(dir, "no-server.yaml"))
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8080/api/v1", p.BaseURL.String())
	require.Equal(t, "Authorization", p.Credential.Header)
	require.Equal(t, "NO_SERVER_TOKEN", p.Credential.Env)
}

// envelope is a request as the generic preamble hands it to the host.
type envelope struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Query   string            `json:"query,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// TestOnTheGenericPreamble loads the real generic preamble (with a fake native bridge standing in
// for the engine: submit answers at once), then the generated one, and checks the envelopes that reach the host: the
// broker's canonical-path rule accepts every path, and the emitted profile's routes grant it.
func TestOnTheGenericPreamble(t *testing.T) {
	s, err := apigen.Load("testdata/store.yaml")
	require.NoError(t, err)
	pre, err := s.Preamble()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, apigen.WriteAll(s, dir, "store"))
	prof, err := profiles.LoadFile(filepath.Join(dir, "store.yaml"))
	require.NoError(t, err)

	vm := goja.New()
	var sent []string
	bridge := vm.NewObject()
	require.NoError(t, bridge.Set("submit", func(req string) *goja.Promise {
		sent = append(sent, req)
		p, resolve, _ := vm.NewPromise()
		resolve(`{"status":200,"headers":{"Content-Type":["application/json"]},"body":"{\"ok\":true}"}`)
		return p
	}))
	for _, name := range []string{"sleep", "log", "b64encode", "b64decode", "utf8encode", "utf8decode"} {
		require.NoError(t, bridge.Set(name, func(goja.FunctionCall) goja.Value { return goja.Undefined() }))
	}
	require.NoError(t, vm.Set("__plimsoll", bridge))
	_, err = vm.RunString(js.Source)
	require.NoError(t, err)
	_, err = vm.RunString(pre)
	require.NoError(t, err)

	run := func(expr string) (envelope, string) {
		t.Helper()
		sent = nil
		_, err := vm.RunString(`var out = null, failed = null;
(` + expr + `).then(function (r) { out = r.json(); }, function (e) { failed = e.message; });`)
		require.NoError(t, err)
		if f := vm.Get("failed"); !goja.IsNull(f) {
			require.Empty(t, sent, "a refused call reaches no host")
			return envelope{}, f.String()
		}
		got, err := vm.RunString("JSON.stringify(out)")
		require.NoError(t, err)
		require.Equal(t, `{"ok":true}`, got.String(), "the response reaches the tool")
		require.Len(t, sent, 1)
		var env envelope
		dec := json.NewDecoder(strings.NewReader(sent[0]))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&env))
		require.NoError(t, broker.CheckPath(env.Path), "the broker must accept %q", env.Path)
		granted := false
		for i := range prof.Routes {
			granted = granted || prof.Routes[i].Match(env.Method, env.Path)
		}
		require.True(t, granted, "%s %s must be granted by the emitted profile", env.Method, env.Path)
		return env, ""
	}

	env, _ := run(`api.getPet({petId: 'a?b#c d"é', fields: ["name", "tag"], "X-Request-Id": "r-1"})`)
	require.Equal(t, envelope{Method: "GET", Path: "/pets/a%3Fb%23c%20d%22%C3%A9", Query: "fields=name,tag",
		Headers: map[string]string{"X-Request-Id": "r-1"}}, env)

	env, _ = run(`api.listPets({limit: 10, tag: ["x", "y z"]})`)
	require.Equal(t, envelope{Method: "GET", Path: "/pets", Query: "limit=10&tag=x&tag=y%20z"}, env)

	env, _ = run(`api.createPet({body: {name: "Rex"}})`)
	require.Equal(t, envelope{Method: "POST", Path: "/pets", Headers: map[string]string{"Content-Type": "application/json"},
		Body: `{"name":"Rex"}`}, env)

	env, _ = run(`api.deletePetsByPetId({petId: "~x_y-z.1"})`)
	require.Equal(t, envelope{Method: "DELETE", Path: "/pets/~x_y-z.1"}, env)

	for _, v := range []string{`".."`, `"."`, `"a/b"`, `"a\\b"`, `"50%"`} {
		_, msg := run(`api.getPet({petId: ` + v + `})`)
		require.Contains(t, msg, `getPet: path parameter "petId" must not `)
	}
	_, msg := run(`api.getPet({})`)
	require.Equal(t, `getPet: missing required parameter "petId"`, msg)

	// The generic shortcuts still work after the generated preamble.
	env, _ = run(`api.get("/status")`)
	require.Equal(t, envelope{Method: "GET", Path: "/status"}, env)
}
