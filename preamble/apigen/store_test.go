package apigen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The same sample store, written three ways: OpenAPI 3.0 YAML, 3.0 JSON and 3.1 YAML (type
// arrays for nullable, a numeric exclusiveMinimum, examples). Each has a $ref'd path-level
// parameter, $ref'd schemas and response, path, query (array too), header and body parameters,
// an operation without operationId and a tagged readiness route; /healthz is not tagged.
var storeDocs = []string{"testdata/store.yaml", "testdata/store.json", "testdata/store31.yaml"}

var storeRoutes = []string{
	"GET /healthz",
	"GET /pets",
	"POST /pets",
	"GET /pets/*",
	"DELETE /pets/*",
	"GET /status",
}

func loadStore(t *testing.T, file string) *Spec {
	t.Helper()
	s, err := Load(file)
	require.NoError(t, err)
	return s
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestStoreRoutes(t *testing.T) {
	for _, file := range storeDocs {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s := loadStore(t, file)
			require.Equal(t, storeRoutes, s.Routes())
			require.Empty(t, s.Warnings())
		})
	}
}

func TestStoreHealth(t *testing.T) {
	for _, file := range storeDocs {
		t.Run(filepath.Base(file), func(t *testing.T) {
			line, ok, err := loadStore(t, file).Health()
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, "GET /status", line)
		})
	}
}

// store.description.txt was checked by hand: every function, its parameters with types and
// required flags, the $ref'd Pet and NewPet types, the derived deletePetsByPetId.
func TestStoreDescription(t *testing.T) {
	want := readFile(t, "testdata/store.description.txt")
	for _, file := range storeDocs {
		t.Run(filepath.Base(file), func(t *testing.T) {
			require.Equal(t, want, loadStore(t, file).Description())
		})
	}
}

// store.profile.yaml was checked by hand against ARCHITECTURE.md "Grant profiles".
func TestStoreProfile(t *testing.T) {
	want := readFile(t, "testdata/store.profile.yaml")
	for _, file := range storeDocs {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s := loadStore(t, file)
			got, err := s.Profile(ProfileOptions{Name: "store", Preamble: "store.preamble.js"})
			require.NoError(t, err)
			require.Equal(t, want, strings.Replace(string(got), "(OpenAPI "+s.OpenAPI+")", "(OpenAPI 3.0.3)", 1))

			var p struct {
				BaseURL    string `yaml:"base_url"`
				Credential struct {
					Header, Scheme, Env string
				}
				Routes      []string
				HealthCheck string `yaml:"health_check"`
				Preamble    string
				Budget      struct{ Calls int }
			}
			require.NoError(t, yaml.Unmarshal(got, &p))
			require.Equal(t, "https://store.example.com/v1", p.BaseURL)
			require.Equal(t, "Authorization", p.Credential.Header)
			require.Equal(t, "Bearer", p.Credential.Scheme)
			require.Equal(t, "STORE_TOKEN", p.Credential.Env)
			require.Equal(t, storeRoutes, p.Routes)
			require.Equal(t, "GET /status", p.HealthCheck)
			require.Equal(t, "store.preamble.js", p.Preamble)
			require.Equal(t, 100, p.Budget.Calls)
		})
	}
}

func TestStorePreambleIsTheSameForEveryForm(t *testing.T) {
	want, err := loadStore(t, storeDocs[0]).Preamble()
	require.NoError(t, err)
	for _, file := range storeDocs[1:] {
		got, err := loadStore(t, file).Preamble()
		require.NoError(t, err)
		require.Equal(t, want, got, file)
	}
}

func TestStorePreambleCalls(t *testing.T) {
	for _, file := range storeDocs {
		t.Run(filepath.Base(file), func(t *testing.T) {
			pre, err := loadStore(t, file).Preamble()
			require.NoError(t, err)
			js := loadPreamble(t, pre)

			// Given a query with an array, When called, Then each value is encoded and the
			// array repeats the name (form, explode).
			c := js.one(`api.listPets({limit: 5, tag: ["a b", "c&d=e", "é"]})`)
			require.Equal(t, "GET", c.Method)
			require.Equal(t, "/pets", c.Path)
			require.Equal(t, strp("limit=5&tag=a%20b&tag=c%26d%3De&tag=%C3%A9"), c.Opts.Query)
			require.Nil(t, c.Opts.Body)
			require.Nil(t, c.Opts.Headers)

			c = js.one(`api.listPets()`)
			require.Equal(t, "/pets", c.Path)
			require.Nil(t, c.Opts.Query)

			// A path parameter stays one segment: ?, #, space, quote and unicode are encoded.
			c = js.one(`api.getPet({petId: 'a?b#c d"é', fields: ["name", "tag"], "X-Request-Id": "r-1"})`)
			require.Equal(t, "GET", c.Method)
			require.Equal(t, "/pets/a%3Fb%23c%20d%22%C3%A9", c.Path)
			require.Equal(t, strp("fields=name,tag"), c.Opts.Query) // form, explode: false
			require.Equal(t, map[string]string{"X-Request-Id": "r-1"}, c.Opts.Headers)

			c = js.one(`api.getPet({petId: 42})`)
			require.Equal(t, "/pets/42", c.Path)

			c = js.one(`api.getPet({petId: "it's (1)!*~"})`)
			require.Equal(t, "/pets/it%27s%20%281%29%21%2A~", c.Path)

			c = js.one(`api.createPet({body: {name: "Rex", tag: null}})`)
			require.Equal(t, "POST", c.Method)
			require.Equal(t, "/pets", c.Path)
			require.Equal(t, strp(`{"name":"Rex","tag":null}`), c.Opts.Body)
			require.Equal(t, map[string]string{"Content-Type": "application/json"}, c.Opts.Headers)

			c = js.one(`api.deletePetsByPetId({petId: 7})`)
			require.Equal(t, "DELETE", c.Method)
			require.Equal(t, "/pets/7", c.Path)

			c = js.one(`api.getStatus()`)
			require.Equal(t, "/status", c.Path)

			// Values the broker's canonical-path rule refuses never reach api.call.
			for _, v := range []string{`".."`, `"."`, `"a/b"`, `"a\\b"`, `"50%"`} {
				js.refuse(`api.getPet({petId: `+v+`})`, `getPet: path parameter "petId" must not `+map[bool]string{
					true:  `be "." or ".."`,
					false: `contain "/", "\" or "%"`,
				}[v == `".."` || v == `"."`])
			}
			js.refuse(`api.getPet({petId: ""})`, `getPet: path parameter "petId" must not be empty`)
			js.refuse(`api.getPet({})`, `getPet: missing required parameter "petId"`)
			js.refuse(`api.getPet()`, `getPet: missing required parameter "petId"`)
			js.refuse(`api.getPet({petId: null})`, `getPet: missing required parameter "petId"`)
			js.refuse(`api.createPet({})`, `createPet: missing required parameter "body"`)
			js.refuse(`api.listPets({limt: 1})`, `listPets: unknown parameter "limt" (known: limit, tag)`)
			js.refuse(`api.getPet(42)`, `getPet: pass one object argument, e.g. api.getPet({...})`)
			js.refuse(`api.getPet({petId: {a: 1}})`, `getPet: parameter "petId" must be a string, number or boolean`)
			js.refuse(`api.getPet({petId: 1, "X-Request-Id": "a\r\nInjected: 1"})`, `getPet: header parameter "X-Request-Id" must not contain CR, LF or NUL`)
			js.refuse(`api.getPet({petId: "\ud800"})`, `getPet: parameter "petId" is not valid Unicode text`)

			// The generic preamble's own functions are untouched.
			for _, m := range []string{"get", "post", "put", "patch", "delete"} {
				require.Equal(t, "generic "+m, js.eval(`api["`+m+`"]()`))
			}
			// A generated function returns api.call's Promise.
			require.Equal(t, "true", js.eval(`api.getStatus() instanceof Promise`))
		})
	}
}

// Loading a preamble twice, or over a generic preamble that already has a function of the same
// name, fails loudly instead of replacing it.
func TestPreambleNeverReplaces(t *testing.T) {
	pre, err := loadStore(t, storeDocs[0]).Preamble()
	require.NoError(t, err)
	js := loadPreamble(t, pre)
	_, err = js.vm.RunString(pre)
	require.ErrorContains(t, err, "plimsoll-specgen: api.search is already defined; not replacing it")
	js = loadPreamble(t, "api.healthz = 1;")
	_, err = js.vm.RunString(pre)
	require.ErrorContains(t, err, "plimsoll-specgen: api.healthz is already defined; not replacing it")
}

func TestPreambleNeedsGenericPreamble(t *testing.T) {
	pre, err := loadStore(t, storeDocs[0]).Preamble()
	require.NoError(t, err)
	_, err = goja.New().RunString(pre)
	require.ErrorContains(t, err, "plimsoll-specgen: load the generic preamble (api.call) before this one")
}
