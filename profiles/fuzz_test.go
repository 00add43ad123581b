package profiles_test

import (
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// FuzzParseRoute checks that every route ParseRoute accepts can be called: a concrete path made
// from it (each '*' filled in) is canonical for the broker and matches, while the same path with
// a '*' left empty, or one segment longer, does not. Seeds: testdata/fuzz/FuzzParseRoute.
func FuzzParseRoute(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		r, err := profiles.ParseRoute(s)
		if err != nil {
			return
		}
		if r.String() != s {
			t.Fatalf("ParseRoute(%q).String() = %q", s, r.String())
		}
		segs := strings.Split(r.Pattern, "/")
		concrete := strings.Join(fill(segs, "x"), "/")
		if err := broker.CheckPath(concrete); err != nil {
			t.Fatalf("route %q accepted, but its path %q is not canonical: %v", s, concrete, err)
		}
		if !r.Match(r.Method, concrete) {
			t.Fatalf("route %q does not match its own path %q", s, concrete)
		}
		if r.Match(r.Method, concrete+"/x") || (r.Pattern == "/" && r.Match(r.Method, "/x")) {
			t.Fatalf("route %q matches a longer path than %q", s, concrete)
		}
		if strings.Contains(r.Pattern, "*") && r.Match(r.Method, strings.Join(fill(segs, ""), "/")) {
			t.Fatalf("route %q matches with its '*' segments empty", s)
		}
		if r.Match(strings.ToLower(r.Method), concrete) {
			t.Fatalf("route %q matches a lower-case method", s)
		}
	})
}

// fill replaces each '*' segment.
func fill(segs []string, with string) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		if s == "*" {
			s = with
		}
		out[i] = s
	}
	return out
}
