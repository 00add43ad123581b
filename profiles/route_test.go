package profiles_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/profiles"
)

func TestRouteMatch(t *testing.T) {
	cases := []struct {
		route, method, path string
		want                bool
	}{
		{"GET /pets", "GET", "/pets", true},
		{"GET /pets", "POST", "/pets", false},
		{"GET /pets", "get", "/pets", false},
		{"GET /pets", "GET", "/Pets", false},
		{"GET /pets", "GET", "/pets/", false},
		{"GET /pets", "GET", "/pets/1", false},
		{"GET /pets", "GET", "/pet", false},
		{"GET /pets", "GET", "/petsx", false},
		{"GET /pets", "GET", "pets", false},
		{"GET /pets", "GET", "", false},
		{"GET /pets", "GET", "/", false},

		{"GET /pets/*", "GET", "/pets/42", true},
		{"GET /pets/*", "GET", "/pets/a%20b", true},
		{"GET /pets/*", "GET", "/pets/*", true},
		{"GET /pets/*", "GET", "/pets", false},      // zero segments
		{"GET /pets/*", "GET", "/pets/", false},     // one empty segment
		{"GET /pets/*", "GET", "/pets//", false},    // two empty segments
		{"GET /pets/*", "GET", "/pets/1/2", false},  // two segments
		{"GET /pets/*", "GET", "/pets/1/", false},   // trailing slash
		{"GET /pets/*", "GET", "/pets//1", false},   // empty then one
		{"GET /pets/*", "GET", "/PETS/1", false},    // case
		{"GET /pets/*", "GET", "/pets1/2", false},   // prefix is not a segment
		{"GET /pets/*", "HEAD", "/pets/1", false},   // HEAD is not GET
		{"GET /pets/*", "GET", "//pets/1", false},   // leading empty segment
		{"GET /pets/*", "GET", "/x/pets/1", false},  // anchored at the start
		{"GET /pets/*", "GET", "/pets/1?x=1", true}, // the matcher sees bytes; '?' is refused before it by the broker

		{"GET /*/toys/*", "GET", "/a/toys/b", true},
		{"GET /*/toys/*", "GET", "/a/toys", false},
		{"GET /*/toys/*", "GET", "/a/b/toys/c", false},
		{"GET /*/toys/*", "GET", "//toys/c", false},
		{"GET /*/toys/*", "GET", "/a/Toys/b", false},

		{"GET /*", "GET", "/x", true},
		{"GET /*", "GET", "/", false},
		{"GET /*", "GET", "/x/y", false},

		{"GET /", "GET", "/", true},
		{"GET /", "GET", "/x", false},
		{"GET /", "GET", "", false},
		{"GET /", "GET", "//", false},

		{"DELETE /a/b/c", "DELETE", "/a/b/c", true},
		{"DELETE /a/b/c", "DELETE", "/a/b", false},
		{"DELETE /a/b/c", "DELETE", "/a/b/c/d", false},
		{"OPTIONS /a", "OPTIONS", "/a", true},
	}
	for _, tc := range cases {
		r, err := profiles.ParseRoute(tc.route)
		require.NoError(t, err, tc.route)
		assert.Equal(t, tc.want, r.Match(tc.method, tc.path), "%s vs %s %q", tc.route, tc.method, tc.path)
		assert.Equal(t, tc.route, r.String())
	}
}

// TestProfileMatchAgreesWithRouteMatch: Profile.Match skips routes by segment count; that must
// never change which route matches first.
func TestProfileMatchAgreesWithRouteMatch(t *testing.T) {
	routes := "routes:\n"
	for _, r := range []string{"GET /", "GET /*", "GET /pets", "GET /pets/*", "GET /*/toys", "GET /pets/*/toys",
		"GET /*/*/*", "POST /pets", "DELETE /a/b/c"} {
		routes += "  - " + r + "\n"
	}
	p, err := profiles.LoadFile(write(t, t.TempDir(), "p.yaml", "base_url: http://127.0.0.1/\n"+routes))
	require.NoError(t, err)
	for _, method := range []string{"GET", "POST", "DELETE", "get"} {
		for _, path := range []string{"", "/", "//", "///", "x", "x/y", "/pets", "/pets/", "/pets/1", "/pets/1/toys",
			"/a/toys", "/a/b/c", "/a/b/c/", "/a//c", "pets/1", "/pets/1/toys/2"} {
			var want *profiles.Route
			for i := range p.Routes {
				if p.Routes[i].Match(method, path) {
					want = &p.Routes[i]
					break
				}
			}
			got, ok := p.Match(method, path)
			assert.Equal(t, want != nil, ok, "%s %q", method, path)
			assert.Same(t, want, got, "%s %q", method, path)
		}
	}
}

func TestProfileMatchReturnsFirstRoute(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "p.yaml", `
base_url: http://127.0.0.1/
routes:
  - GET /pets/mine
  - GET /pets/*
  - GET /pets/*/toys
  - GET /pets/special
  - POST /pets/*
`)
	p, err := profiles.LoadFile(path)
	require.NoError(t, err)
	cases := []struct{ method, path, want string }{
		{"GET", "/pets/mine", "GET /pets/mine"},
		{"GET", "/pets/special", "GET /pets/*"}, // the wildcard comes first
		{"GET", "/pets/1", "GET /pets/*"},
		{"GET", "/pets/1/toys", "GET /pets/*/toys"},
		{"POST", "/pets/mine", "POST /pets/*"},
		{"PUT", "/pets/1", ""},
		{"GET", "/pets", ""},
	}
	for _, tc := range cases {
		r, ok := p.Match(tc.method, tc.path)
		if tc.want == "" {
			assert.False(t, ok, "%s %s", tc.method, tc.path)
			assert.Nil(t, r)
			continue
		}
		require.True(t, ok, "%s %s", tc.method, tc.path)
		assert.Equal(t, tc.want, r.String(), "%s %s", tc.method, tc.path)
		assert.Same(t, &p.Routes[indexOf(p.Routes, tc.want)], r, "Match returns the profile's own route")
	}
}

func indexOf(routes []profiles.Route, s string) int {
	for i, r := range routes {
		if r.String() == s {
			return i
		}
	}
	return -1
}

// TestRouteNotParsedMatchesNothing: a Route built as a literal has no compiled segments; it
// must fail closed, not grant "/".
func TestRouteNotParsedMatchesNothing(t *testing.T) {
	for _, r := range []profiles.Route{{Method: "GET", Pattern: "/admin"}, {Method: "GET", Pattern: "/*"}, {}} {
		for _, path := range []string{"/", "/admin", "/x", ""} {
			assert.False(t, r.Match(r.Method, path), "%q vs %q", r.String(), path)
		}
	}
}

func TestParseRoute(t *testing.T) {
	for _, ok := range []string{"GET /", "HEAD /a", "PUT /a/*", "PATCH /*/*", "DELETE /a-b_c~d", "GET /a:b@c"} {
		_, err := profiles.ParseRoute(ok)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"", "GET", "GET ", " GET /", "GET /a b", "GET /a\tb", "GET /é", "GET /a\\b",
		"GET /a;b", "GET /a?b", "GET /a#b", "GET /a%2e", "GET /**", "GET /a*", "GET /{a}", "GET /a/.", "TRACE /",
		"GET /a\x00", "GET /a\x7f", "POST /a%20b"} {
		_, err := profiles.ParseRoute(bad)
		assert.Error(t, err, "%q", bad)
	}
}
