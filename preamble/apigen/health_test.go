package apigen

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docWith wraps path items (YAML, indented two spaces under paths:) in a minimal 3.0 document.
func docWith(paths string) []byte {
	return []byte("openapi: 3.0.3\ninfo: {title: T, version: '1'}\nservers: [{url: 'http://127.0.0.1:9000'}]\npaths:\n" + paths)
}

const okResp = "responses: {'200': {description: ok}}"

func TestHealthRefusals(t *testing.T) {
	cases := []struct {
		name    string
		paths   string
		problem HealthProblem
		ops     []OpRef
		msg     string
	}{
		{
			name: "not a GET",
			paths: `  /status:
    post: {x-plimsoll-health-check: true, ` + okResp + `}
`,
			problem: HealthNotGET,
			ops:     []OpRef{{"POST", "/status"}},
			msg:     "specgen: x-plimsoll-health-check on POST /status: the health route must be a GET",
		},
		{
			name: "path parameter",
			paths: `  /pets/{id}:
    get:
      x-plimsoll-health-check: true
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      ` + okResp + `
`,
			problem: HealthPathParams,
			ops:     []OpRef{{"GET", "/pets/{id}"}},
			msg:     "specgen: x-plimsoll-health-check on GET /pets/{id}: the health route must have no path parameters",
		},
		{
			name: "two tagged",
			paths: `  /a:
    get: {x-plimsoll-health-check: true, ` + okResp + `}
  /b:
    get: {x-plimsoll-health-check: true, ` + okResp + `}
`,
			problem: HealthMultiple,
			ops:     []OpRef{{"GET", "/a"}, {"GET", "/b"}},
			msg:     "specgen: x-plimsoll-health-check on 2 operations (GET /a, GET /b): tag exactly one",
		},
		{
			name: "three tagged, one of them a POST",
			paths: `  /a:
    get: {x-plimsoll-health-check: true, ` + okResp + `}
    post: {x-plimsoll-health-check: true, ` + okResp + `}
  /c:
    get: {x-plimsoll-health-check: true, ` + okResp + `}
`,
			problem: HealthMultiple,
			ops:     []OpRef{{"GET", "/a"}, {"POST", "/a"}, {"GET", "/c"}},
			msg:     "specgen: x-plimsoll-health-check on 3 operations (GET /a, POST /a, GET /c): tag exactly one",
		},
		{
			name: "not a boolean",
			paths: `  /status:
    get: {x-plimsoll-health-check: "yes", ` + okResp + `}
`,
			problem: HealthNotBool,
			ops:     []OpRef{{"GET", "/status"}},
			msg:     "specgen: x-plimsoll-health-check on GET /status: the value must be true or false",
		},
		{
			name: "not canonical",
			paths: `  /a;b:
    get: {x-plimsoll-health-check: true, ` + okResp + `}
  /ok:
    get: {` + okResp + `}
`,
			problem: HealthNotCanonical,
			ops:     []OpRef{{"GET", "/a;b"}},
			msg:     "specgen: x-plimsoll-health-check on GET /a;b: the health route must be a canonical path the broker accepts",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(docWith(tc.paths))
			require.NoError(t, err, "the document itself loads; only health generation fails")

			_, ok, err := s.Health()
			require.False(t, ok)
			require.EqualError(t, err, tc.msg)
			require.ErrorIs(t, err, ErrHealthTag)
			var he *HealthTagError
			require.True(t, errors.As(err, &he))
			require.Equal(t, tc.problem, he.Problem)
			require.Equal(t, tc.ops, he.Ops)

			_, err = s.Profile(ProfileOptions{})
			require.EqualError(t, err, tc.msg)

			dir := t.TempDir()
			require.EqualError(t, WriteAll(s, dir, "t"), tc.msg)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "nothing is written when the health tag is misused")
		})
	}
}

// A route merely named /status or /healthz is no evidence of readiness: without the tag there
// is no health line and no health_check.
func TestHealthUntaggedIsNotGuessed(t *testing.T) {
	s, err := Parse(docWith(`  /status:
    get: {` + okResp + `}
  /healthz:
    get: {` + okResp + `}
  /readyz:
    get: {x-plimsoll-health-check: false, ` + okResp + `}
`))
	require.NoError(t, err)
	line, ok, err := s.Health()
	require.NoError(t, err)
	require.False(t, ok)
	require.Empty(t, line)

	p, err := s.Profile(ProfileOptions{})
	require.NoError(t, err)
	require.NotContains(t, string(p), "health_check:")
	require.Contains(t, string(p), "# no operation is tagged x-plimsoll-health-check: true")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t.health"), []byte("GET /stale\n"), 0o644))
	require.NoError(t, WriteAll(s, dir, "t"))
	_, err = os.Stat(filepath.Join(dir, "t.health"))
	require.ErrorIs(t, err, os.ErrNotExist, "a stale health file from an earlier run is removed")
	prof, err := os.ReadFile(filepath.Join(dir, "t.yaml"))
	require.NoError(t, err)
	require.False(t, strings.Contains(string(prof), "\nhealth_check:"))
}

func TestHealthTaggedOnBasePathRoute(t *testing.T) {
	s, err := Parse([]byte(`openapi: 3.1.0
info: {title: T, version: '1'}
servers: [{url: 'https://api.example.com/v2/'}]
paths:
  /capacity:
    get: {x-plimsoll-health-check: true, ` + okResp + `}
`))
	require.NoError(t, err)
	line, ok, err := s.Health()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "GET /capacity", line, "relative to base_url's path, like the routes")
	base, note := s.BaseURL()
	require.Equal(t, "https://api.example.com/v2", base)
	require.Empty(t, note)
	require.True(t, s.Ops[0].Health)
}
