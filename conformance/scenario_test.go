package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const minimal = `
description: d
grant: {routes: [GET /items]}
upstream:
  GET /items: {body: ok}
operations:
  - call: GET /items
    expect: {status: 200, body: ok}
trace: [forwarded]
received: [GET /items]
`

func TestParseMinimal(t *testing.T) {
	s, err := Parse("dir/minimal.yaml", []byte(minimal))
	require.NoError(t, err)
	assert.Equal(t, "minimal", s.Name)
	c := s.Calls()[0]
	assert.Equal(t, "forwarded", c.Expect.Outcome)
	assert.True(t, c.Expect.OK)
	assert.Equal(t, "text", c.Read)
	assert.Equal(t, []ReceivedExpect{{Method: "GET", Path: "/items"}}, s.Received)
	assert.Equal(t, 200, s.Upstream[0].Replies[0].Status)
}

// A broken scenario is refused with its file, line and field.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, edit, want string
	}{
		{"unknown top field", "colour: red\n", `minimal.yaml:11: colour: unknown field`},
		{"unknown expect field", strings.Replace(minimal, "{status: 200, body: ok}", "{status: 200, bodyy: ok}", 1), `minimal.yaml:8: operations[0].expect.bodyy: unknown field`},
		{"no status", strings.Replace(minimal, "{status: 200, body: ok}", "{body: ok}", 1), `operations[0].expect.status: is required`},
		{"bad outcome", strings.Replace(minimal, "trace: [forwarded]", "trace: [sheded]", 1), `trace[0]: "sheded" is not an outcome`},
		{"trace disagrees", strings.Replace(minimal, "trace: [forwarded]", "trace: [shed]", 1), `trace[0]: outcome "shed" disagrees with call 1's expected outcome "forwarded"`},
		{"trace too short", strings.Replace(minimal, "trace: [forwarded]", "trace: []", 1), `trace: has 0 entries but the scenario makes 1 calls`},
		{"no received", strings.Replace(minimal, "received: [GET /items]", "", 1), `received: is required`},
		{"lower-case method", strings.Replace(minimal, "call: GET /items", "call: get /items", 1), `operations[0].call: want "METHOD /path"`},
		{"bad base64", strings.Replace(minimal, "{body: ok}", "{body: {base64: '!!'}}", 1), `upstream.GET /items.body.base64: not standard base64`},
		{"two body kinds", strings.Replace(minimal, "{body: ok}", "{body: {text: a, base64: YQ==}}", 1), `give one of text`},
		{"repeat without size", strings.Replace(minimal, "{body: ok}", "{body: {repeat: ab}}", 1), `repeat needs a size`},
		{"json string request", strings.Replace(minimal, "  - call: GET /items\n", "  - call: GET /items\n    body: {json: just text}\n", 1), `a JSON request body must be an object or a list`},
		{"bad sleep", strings.Replace(minimal, "operations:\n", "operations:\n  - sleep: soon\n", 1), `operations[0].sleep: want a duration`},
		{"sleep with more", strings.Replace(minimal, "operations:\n", "operations:\n  - {sleep: 1s, call: GET /x}\n", 1), `a sleep operation has only sleep`},
		{"duplicate key", strings.Replace(minimal, "description: d\n", "description: d\ndescription: e\n", 1), `minimal.yaml:`},
		{"bad matcher", strings.Replace(minimal, "{status: 200, body: ok}", "{status: 200, headers: {X: {maybe: true}}}", 1), `operations[0].expect.headers.X.maybe: unknown field`},
		{"query and raw", strings.Replace(minimal, "received: [GET /items]", "received:\n  - request: GET /items?a=1\n    query: {a: '1'}\n", 1), `received[0].query: give query or raw_query, not both`},
		{"not yaml", "{", `minimal.yaml:1: (file)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := c.edit
			if !strings.Contains(text, "description") && c.name != "not yaml" {
				text = minimal + c.edit
			}
			_, err := Parse("dir/minimal.yaml", []byte(text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "dir/minimal.yaml:")
		})
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadDir(dir)
	assert.ErrorContains(t, err, "no scenarios")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "one.yaml"), []byte(minimal), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# not a scenario"), 0o600))
	got, err := LoadDir(dir)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, filepath.Join(dir, "one.yaml"), got[0].File)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "two.yaml"), []byte("grant: 1"), 0o600))
	_, err = LoadDir(dir)
	assert.ErrorContains(t, err, "two.yaml")
}

// The v1 suite covers what issue 5 asks of it: every outcome, every body kind, the two-step
// large response, overload with 503 and 429 and Retry-After, slow responses, multi-value headers,
// unicode, empty bodies, 204 and 3xx, grants and budgets, query arrays, sleeps.
func TestV1Coverage(t *testing.T) {
	scenarios := v1Scenarios(t)
	require.NoError(t, Check(scenarios))
	outcomes := map[string]bool{}
	bodyKinds := map[string]bool{}
	statuses := map[int]bool{}
	var largest int
	var sawArrayQuery, sawSleep, sawMultiHeader, sawRetryAfter, sawBudget, sawHealth, sawDelay, sawRaw bool
	for _, s := range scenarios {
		assert.NotEmpty(t, s.Description, s.Name)
		sawBudget = sawBudget || s.Grant.Budget > 0
		sawHealth = sawHealth || s.Grant.HealthCheck != ""
		for _, tr := range s.Trace {
			outcomes[tr.Outcome] = true
		}
		for _, route := range s.Upstream {
			for _, r := range route.Replies {
				statuses[r.Status] = true
				sawDelay = sawDelay || r.Delay > 0
				for _, h := range r.Headers {
					sawMultiHeader = sawMultiHeader || len(h.Values) > 1
					sawRetryAfter = sawRetryAfter || (h.Name == "Retry-After" && (r.Status == 503 || r.Status == 429))
				}
				if r.Body != nil {
					bodyKinds[r.Body.Kind] = true
					largest = max(largest, len(r.Body.Content()))
				}
			}
		}
		for _, op := range s.Operations {
			if op.Call == nil {
				sawSleep = true
				continue
			}
			if op.Call.Body != nil {
				bodyKinds["request "+op.Call.Body.Kind] = true
			}
			if q := op.Call.Query; q != nil {
				sawRaw = sawRaw || q.IsRaw
				for _, p := range q.Params {
					sawArrayQuery = sawArrayQuery || p.Array && len(p.Values) > 1
				}
			}
			if b := op.Call.Expect.Body; b != nil {
				bodyKinds["expect "+b.Kind] = true
			}
		}
	}
	for _, o := range []string{"forwarded", "shed", "denied", "over_budget", "invalid", "failed"} {
		assert.True(t, outcomes[o], "no scenario traces the outcome %s", o)
	}
	for _, k := range []string{"text", "base64", "json", "repeat", "repeat_base64",
		"request text", "request base64", "request json", "request repeat",
		"expect text", "expect base64", "expect json", "expect json_contains", "expect repeat", "expect repeat_base64"} {
		assert.True(t, bodyKinds[k], "no scenario uses the body kind %s", k)
	}
	for _, st := range []int{200, 201, 204, 301, 302, 303, 304, 307, 308, 404, 429, 500, 502, 503} {
		assert.True(t, statuses[st], "no upstream answers %d", st)
	}
	assert.Greater(t, largest, 4*64<<10, "a response far larger than a 64 KiB first buffer")
	assert.True(t, sawArrayQuery && sawRaw && sawSleep && sawMultiHeader && sawRetryAfter && sawBudget && sawHealth && sawDelay)
}

func TestDriverInput(t *testing.T) {
	s, err := Parse("x.yaml", []byte(`
description: d
grant: {routes: [GET /a]}
upstream: {GET /a: {}}
operations:
  - call: GET /a
    query: {z: "1", tag: [b, a], none: []}
    headers: {X-One: v, X-Two: [a, b]}
    body: {base64: "AP8="}
    read: bytes
    expect: {status: 200}
  - sleep: 1.5s
  - call: POST /a
    query: "raw=1&raw=2"
    body: {json: {k: [1, "two"]}}
    expect: {status: 200}
trace: [forwarded, forwarded]
received: []
`))
	require.NoError(t, err)
	require.True(t, json.Valid(s.driverInput()))
	want := `{"scenario":"x","operations":[` +
		`{"op":"call","method":"GET","path":"/a","query":{"z":"1","tag":["b","a"],"none":[]},"headers":{"X-One":"v","X-Two":["a","b"]},"body_base64":"AP8=","read":"bytes"},` +
		`{"op":"sleep","ms":1500},` +
		`{"op":"call","method":"POST","path":"/a","query":"raw=1&raw=2","json":{"k":[1,"two"]},"read":"text"}]}`
	assert.Equal(t, want, string(s.driverInput()))
}

func TestMatchers(t *testing.T) {
	assert.Equal(t, "", matchHeader(HeaderMatch{Values: []string{"a", "b"}}, []string{"a", "b"}))
	assert.Equal(t, `expected ["a", "b"], observed ["a, b"]`, matchHeader(HeaderMatch{Values: []string{"a", "b"}}, []string{"a, b"}))
	assert.Equal(t, `expected absent, observed ["shed"]`, matchHeader(HeaderMatch{Absent: true}, []string{"shed"}))
	assert.Equal(t, "expected present, observed absent", matchHeader(HeaderMatch{Present: true}, nil))
	assert.Equal(t, `expected one whole number from 20 to 30, observed ["31"]`, matchHeader(HeaderMatch{Between: &[2]int{20, 30}}, []string{"31"}))
	assert.Equal(t, "", matchHeader(HeaderMatch{Between: &[2]int{20, 30}}, []string{"29"}))
	assert.Equal(t, `expected one value containing "/v1", observed absent`, matchHeader(HeaderMatch{Contains: "/v1"}, nil))

	assert.Equal(t, `expected "ok", observed "ko"`, matchBody(&Body{Kind: "text", Text: "ok"}, []byte("ko")))
	long := &Body{Kind: "repeat", Text: "0123456789", Size: 1000}
	got := append([]byte(nil), long.Content()...)
	got[700] = 'X'
	assert.Equal(t, `expected 1000 bytes, observed 1000; they differ from byte 700: expected …"234567890123456789012345678901234567890123456789"…, observed …"23456789X123456789012345678901234567890123456789"…`,
		matchBody(long, got))
	assert.Equal(t, "", matchBody(&Body{Kind: "json", JSON: map[string]any{"a": 1.0}, JSONText: []byte(`{"a":1}`)}, []byte(`{ "a" : 1 }`)))
	assert.Equal(t, `expected JSON containing {"error":"shed"}, observed {"error":"denied"} ($.error differs)`,
		matchBody(&Body{Kind: "json_contains", JSON: map[string]any{"error": "shed"}, JSONText: []byte(`{"error":"shed"}`)}, []byte(`{"error":"denied"}`)))
	assert.Contains(t, matchBody(&Body{Kind: "json", JSONText: []byte(`{}`)}, []byte("<html>")), "not JSON")
}

func TestObservedBody(t *testing.T) {
	str := func(s string) *string { return &s }
	b, err := observedBody(observation{BodyLatin1: str("\x00\u00ff\u0080a")}, "bytes")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0xff, 0x80, 'a'}, b)
	_, err = observedBody(observation{BodyLatin1: str("a☕")}, "bytes")
	assert.ErrorContains(t, err, "U+2615 at byte 1")
	b, err = observedBody(observation{BodyBase64: str("AP8=")}, "bytes")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0xff}, b)
	_, err = observedBody(observation{Body: str("x")}, "bytes")
	assert.ErrorContains(t, err, "read: bytes asks for body_base64 or body_latin1")
	_, err = observedBody(observation{Body: str("x"), BodyBase64: str("eA==")}, "text")
	assert.ErrorContains(t, err, "more than one")
	_, err = observedBody(observation{}, "text")
	assert.ErrorContains(t, err, "no body")
}
