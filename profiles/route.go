package profiles

import (
	"fmt"
	"strings"
)

// Route is one granted METHOD + path pattern, split into segments at load so matching does no
// parsing and no allocation. A '*' segment matches exactly one non-empty segment.
type Route struct {
	Method   string
	Pattern  string
	segments []string
	text     string // Method + " " + Pattern, kept so the broker's trace needs no allocation
}

// MaxPathBytes caps a guest path. The broker refuses longer paths, so a longer pattern could
// never match and is refused at load.
const MaxPathBytes = 2048

// String is the route as written in the profile: "GET /pets/*".
func (r Route) String() string {
	if r.text != "" {
		return r.text
	}
	return r.Method + " " + r.Pattern
}

// Match reports whether method and a canonical path fall under this route. Matching is exact and
// case-sensitive: the broker never rewrites what it matches.
func (r *Route) Match(method, path string) bool {
	if method != r.Method || len(path) == 0 || path[0] != '/' {
		return false
	}
	if len(r.segments) == 0 {
		// Only "/" has no segments. A Route built by hand, not by ParseRoute, has none either:
		// it matches nothing rather than granting "/".
		return path == "/" && r.Pattern == "/"
	}
	rest := path[1:]
	for i, want := range r.segments {
		if want == "*" {
			n := strings.IndexByte(rest, '/')
			if n < 0 {
				n = len(rest)
			}
			if n == 0 {
				return false // '*' needs a non-empty segment
			}
			rest = rest[n:]
		} else {
			if !strings.HasPrefix(rest, want) {
				return false
			}
			rest = rest[len(want):]
		}
		// The segment must end here: at the end of the path, or at a '/' when more follow.
		if i == len(r.segments)-1 {
			return rest == ""
		}
		if rest == "" || rest[0] != '/' {
			return false
		}
		rest = rest[1:]
	}
	return false // unreachable: the loop returns at the last segment
}

var routeMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true,
}

// ParseRoute parses "METHOD /path/*" as it appears in a profile.
func ParseRoute(s string) (Route, error) {
	method, pattern, ok := strings.Cut(s, " ")
	if !ok {
		return Route{}, fmt.Errorf("%q is not \"METHOD /path\"", s)
	}
	if !routeMethods[method] {
		return Route{}, fmt.Errorf("%q: method %q is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS", s, method)
	}
	if err := checkPattern(pattern); err != nil {
		return Route{}, fmt.Errorf("%q: %w", s, err)
	}
	segs := []string{}
	if pattern != "/" {
		segs = strings.Split(pattern[1:], "/")
	}
	return Route{Method: method, Pattern: pattern, segments: segs, text: s}, nil
}

// checkPattern holds patterns to the same canonical rules the broker applies to guest paths, so a
// granted route can always be matched by some canonical path.
func checkPattern(p string) error {
	if p == "" || p[0] != '/' {
		return fmt.Errorf("path %q must start with '/'", p)
	}
	if len(p) > MaxPathBytes {
		return fmt.Errorf("path is %d bytes, over the %d-byte cap the broker puts on paths", len(p), MaxPathBytes)
	}
	if p == "/" {
		return nil
	}
	for _, seg := range strings.Split(p[1:], "/") {
		switch {
		case seg == "":
			return fmt.Errorf("path %q has an empty segment", p)
		case seg == "." || seg == "..":
			return fmt.Errorf("path %q has a %q segment", p, seg)
		case seg != "*" && strings.Contains(seg, "*"):
			return fmt.Errorf("path %q: '*' must be a whole segment", p)
		case strings.ContainsAny(seg, "{}"):
			return fmt.Errorf("path %q has a '{param}': write '*' for a path parameter", p)
		}
		for i := 0; i < len(seg); i++ {
			if c := seg[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`\;?#%`, c) >= 0 {
				return fmt.Errorf("path %q has a character %q that a canonical path cannot contain", p, c)
			}
		}
	}
	return nil
}

// concrete reports whether a pattern has no wildcard.
func (r Route) concrete() bool { return !strings.Contains(r.Pattern, "*") }

// Match returns the first granted route that method and path fall under. A route matches only
// paths with one '/' per segment of its pattern ("/" counts as one), so routes of another
// length are skipped without being walked.
func (p *Profile) Match(method, path string) (*Route, bool) {
	slashes := strings.Count(path, "/")
	for i := range p.Routes {
		r := &p.Routes[i]
		if max(len(r.segments), 1) == slashes && r.Match(method, path) {
			return r, true
		}
	}
	return nil, false
}
