package profiles_test

import (
	"errors"
	"os"
	"path/filepath"
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

// FuzzLoadFile: the loader never panics on any YAML or JSON file, every refusal is a
// *profiles.Error naming the file, and whatever it accepts is a profile the broker can use: a
// base URL with a host, at least one route, a concrete GET health check if any, and limits set.
func FuzzLoadFile(f *testing.F) {
	f.Add("yaml", []byte("base_url: http://127.0.0.1:8080/v1\nroutes: [GET /pets/*]\nhealth_check: GET /status\n"))
	f.Add("json", []byte(`{"base_url":"https://api.test","credential":{"env":"T"},"routes":["POST /a"],"limits":{"memory":"64MiB"}}`))
	f.Add("yaml", []byte("base_url: http://h\nroutes: [GET /x]\nbudget: {calls: 0}\nlimits: {run_timeout: 1s, max_host_calls: 1}\n"))
	dir := f.TempDir() // one directory per worker: the loader reads a file, not bytes
	f.Fuzz(func(t *testing.T, ext string, data []byte) {
		if ext != "yaml" && ext != "json" {
			return
		}
		path := filepath.Join(dir, "fuzz."+ext)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := profiles.LoadFile(path)
		if err != nil {
			var pe *profiles.Error
			if !errors.As(err, &pe) || pe.File != path || pe.Reason == "" {
				t.Fatalf("refusal %v is not a *profiles.Error naming the file and a reason", err)
			}
			return
		}
		if p.BaseURL == nil || p.BaseURL.Hostname() == "" || len(p.Routes) == 0 || p.Limits.RunTimeout <= 0 {
			t.Fatalf("accepted an unusable profile: %+v", p)
		}
		if hc := p.HealthCheck; hc != nil && (hc.Method != "GET" || strings.ContainsAny(hc.Pattern, "*{}")) {
			t.Fatalf("accepted health_check %s", hc)
		}
		if c := p.Concurrency; c != nil && c.Validate() != nil {
			t.Fatalf("accepted concurrency %s: %v", c, c.Validate())
		}
	})
}
