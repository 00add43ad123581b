package apigen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/plimsoll/plimsoll/profiles"
)

type profileYAML struct {
	BaseURL    string `yaml:"base_url"`
	Credential struct {
		Header, Scheme, Env string
	}
	Routes      []string
	HealthCheck string `yaml:"health_check"`
	Preamble    string
	Budget      struct{ Calls int }
}

func parseProfile(t *testing.T, p []byte) profileYAML {
	t.Helper()
	var out profileYAML
	require.NoError(t, yaml.Unmarshal(p, &out), string(p))
	return out
}

func docServers(servers, extra string) []byte {
	return []byte("openapi: 3.0.3\ninfo: {title: Acme Widgets!, version: '1'}\n" + servers +
		"paths:\n  /w:\n    get: {responses: {'200': {description: ok}}}\n" + extra)
}

func TestProfileBaseURL(t *testing.T) {
	cases := []struct {
		servers, base, comment string
	}{
		{"", PlaceholderBaseURL, "# placeholder: the document names no server; set the API's address\n"},
		{"servers: [{url: /api/v3}]\n", "http://127.0.0.1:8080/api/v3", `# placeholder: the document's server "/api/v3" is relative; set the API's address` + "\n"},
		{"servers: [{url: 'https://user:pw@api.example.com/v1'}]\n", PlaceholderBaseURL, `# placeholder: the document's server "https://user:pw@api.example.com/v1" has userinfo; set the API's address` + "\n"},
		{"servers: [{url: 'https://api.example.com/v1?x=1'}]\n", PlaceholderBaseURL, `# placeholder: the document's server "https://api.example.com/v1?x=1" has a query; set the API's address` + "\n"},
		{"servers: [{url: 'ftp://api.example.com/'}]\n", PlaceholderBaseURL, `# placeholder: the document's server "ftp://api.example.com/" is not http or https; set the API's address` + "\n"},
		{"servers: [{url: 'https://{region}.example.com:8443/{v}/', variables: {region: {default: eu}, v: {default: v2}}}]\n", "https://eu.example.com:8443/v2", ""},
		{"servers: [{url: 'http://localhost:3000'}, {url: 'https://other'}]\n", "http://localhost:3000", ""},
	}
	for _, tc := range cases {
		t.Run(tc.base+tc.servers, func(t *testing.T) {
			s, err := Parse(docServers(tc.servers, ""))
			require.NoError(t, err)
			p, err := s.Profile(ProfileOptions{})
			require.NoError(t, err)
			require.Equal(t, tc.base, parseProfile(t, p).BaseURL)
			if tc.comment != "" {
				require.Contains(t, string(p), tc.comment+"base_url: ")
			} else {
				require.NotContains(t, string(p), "placeholder")
			}
		})
	}
}

func TestProfileCredential(t *testing.T) {
	cases := []struct {
		name, schemes, header, scheme, comment string
	}{
		{"bearer", "bearer: {type: http, scheme: bearer}", "Authorization", "Bearer", ""},
		{"api key header", "key: {type: apiKey, in: header, name: X-Api-Key}", "X-Api-Key", "", ""},
		{"api key query", "key: {type: apiKey, in: query, name: api_key}", "Authorization", "",
			`# security scheme "key" (apiKey in query) is not a simple header; check how the API expects the secret`},
		{"basic", "basic: {type: http, scheme: basic}", "Authorization", "",
			`# security scheme "basic" (http basic) is not a simple header; check how the API expects the secret`},
		{"simple one wins", "a: {type: oauth2, flows: {clientCredentials: {tokenUrl: 'https://x/t', scopes: {}}}}\n    b: {type: apiKey, in: header, name: X-Key}", "X-Key", "", ""},
		{"none", "", "Authorization", "", "# the document declares no security scheme; Authorization is the default"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			extra := ""
			if tc.schemes != "" {
				extra = "components:\n  securitySchemes:\n    " + tc.schemes + "\n"
			}
			s, err := Parse(docServers("", extra))
			require.NoError(t, err)
			p, err := s.Profile(ProfileOptions{})
			require.NoError(t, err)
			got := parseProfile(t, p)
			require.Equal(t, tc.header, got.Credential.Header)
			require.Equal(t, tc.scheme, got.Credential.Scheme)
			require.Equal(t, "ACME_WIDGETS_TOKEN", got.Credential.Env)
			if tc.comment != "" {
				require.Contains(t, string(p), tc.comment+"\ncredential:\n")
			}
			require.Empty(t, got.Preamble, "no preamble field unless one is emitted")
		})
	}
}

func TestProfileTopLevelSecurityChosenFirst(t *testing.T) {
	s, err := Parse(docServers("security: [{zkey: []}]\n", `components:
  securitySchemes:
    akey: {type: apiKey, in: header, name: X-A}
    zkey: {type: apiKey, in: header, name: X-Z}
`))
	require.NoError(t, err)
	require.Equal(t, Credential{Header: "X-Z"}, s.Credential())
}

func TestNames(t *testing.T) {
	for title, want := range map[string]string{
		"Sample Store":          "sample-store",
		"Acme Widgets!":         "acme-widgets",
		"  ":                    "api",
		"Café/API v2 (beta)":    "caf-api-v2-beta",
		"../../etc/passwd":      "etc-passwd",
		"日本語":                   "api",
		strings.Repeat("x", 99): strings.Repeat("x", 40),
	} {
		require.Equal(t, want, fileName(title), title)
		require.True(t, ValidName(fileName(title)))
	}
	require.Equal(t, "SAMPLE_STORE_TOKEN", EnvName("sample-store"))
	require.Equal(t, "API_1PASS_TOKEN", EnvName("1pass"))
	for _, bad := range []string{"", "../x", "a/b", "-x", "a b", ".hidden", "a.b"} {
		require.False(t, ValidName(bad), bad)
	}
}

func TestWriteAll(t *testing.T) {
	s := loadStore(t, "testdata/store.yaml")
	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, WriteAll(s, dir, ""))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{
		"sample-store.routes", "sample-store.preamble.js", "sample-store.preamble.py", "sample-store.description.txt",
		"sample-store.health", "sample-store.yaml",
	}, names)
	require.Equal(t, strings.Join(storeRoutes, "\n")+"\n", readFile(t, filepath.Join(dir, "sample-store.routes")))
	require.Equal(t, "GET /status\n", readFile(t, filepath.Join(dir, "sample-store.health")))
	pre, _ := s.Preamble()
	require.Equal(t, pre, readFile(t, filepath.Join(dir, "sample-store.preamble.js")))
	py, err := s.PythonClient()
	require.NoError(t, err)
	require.Equal(t, py, readFile(t, filepath.Join(dir, "sample-store.preamble.py")))
	require.Equal(t, s.Description(), readFile(t, filepath.Join(dir, "sample-store.description.txt")))
	require.Contains(t, readFile(t, filepath.Join(dir, "sample-store.yaml")), "\npreamble_python: sample-store.preamble.py\n")
	prof := parseProfile(t, []byte(readFile(t, filepath.Join(dir, "sample-store.yaml"))))
	require.Equal(t, "sample-store.preamble.js", prof.Preamble, "the profile names its preamble, relative to itself")
	require.Equal(t, "SAMPLE_STORE_TOKEN", prof.Credential.Env)
	require.Equal(t, "GET /status", prof.HealthCheck)

	require.EqualError(t, WriteAll(s, dir, "../evil"), `specgen: name "../evil": use letters, digits, '-' and '_' only`)
}

// Header parameters the broker does not allow by default are granted in request_headers, once
// each; the profile loads.
func TestProfileGrantsHeaderParameters(t *testing.T) {
	doc := []byte(`openapi: 3.0.3
info: {title: Acme, version: '1'}
servers: [{url: 'http://127.0.0.1:8080'}]
paths:
  /w:
    get:
      parameters:
        - {name: X-Widget-Tag, in: header, schema: {type: string}}
        - {name: Accept, in: header, schema: {type: string}}
      responses: {'200': {description: ok}}
    post:
      parameters:
        - {name: X-Widget-Tag, in: header, schema: {type: string}}
        - {name: X-Batch, in: header, schema: {type: string}}
      responses: {'200': {description: ok}}
`)
	s, err := Parse(doc)
	require.NoError(t, err)
	p, err := s.Profile(ProfileOptions{Name: "acme"})
	require.NoError(t, err)
	var out struct {
		RequestHeaders []string `yaml:"request_headers"`
	}
	require.NoError(t, yaml.Unmarshal(p, &out))
	require.Equal(t, []string{"X-Batch", "X-Widget-Tag"}, out.RequestHeaders, string(p))
	path := filepath.Join(t.TempDir(), "acme.yaml")
	require.NoError(t, os.WriteFile(path, p, 0o644))
	loaded, err := profiles.LoadFile(path)
	require.NoError(t, err)
	require.Equal(t, []string{"X-Batch", "X-Widget-Tag"}, loaded.RequestHeaders)
}

func TestShortStableNames(t *testing.T) {
	for _, c := range []struct{ title, server, want string }{
		{"GitHub's official OpenAPI spec + Octokit extension", "https://api.github.com", "github"},
		{"Stripe API", "https://api.stripe.com/", "stripe"},
		{"Discord HTTP API (Preview)", "https://discord.com/api/v10", "discord"},
		{"Whatever", "https://api.service.co.uk/v2", "service"},
		{"GitHub's official OpenAPI spec + Octokit extension", "http://127.0.0.1:9000", "github-octokit"},
		{"Sample Store", "https://store.example.com/v1", "sample-store"},
		{"E2E Pet Store", "http://localhost:8080/v1", "e2e-pet-store"},
		{"The REST API v2", "", "the-rest-api-v2"},
	} {
		servers := ""
		if c.server != "" {
			servers = "servers: [{url: \"" + c.server + "\"}]\n"
		}
		s, err := Parse([]byte("openapi: 3.0.3\ninfo: {title: \"" + c.title + "\", version: '1'}\n" + servers +
			"paths:\n  /a:\n    get: {responses: {'200': {description: ok}}}\n"))
		require.NoError(t, err)
		require.Equal(t, c.want, s.Name(), c.title+" "+c.server)
	}
	s, err := Parse([]byte("openapi: 3.0.3\ninfo: {title: T, version: '1', x-plimsoll-name: acme}\npaths:\n  /a:\n    get: {responses: {'200': {description: ok}}}\n"))
	require.NoError(t, err)
	require.Equal(t, "acme", s.Name())
}
