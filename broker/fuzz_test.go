package broker_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// naiveMatch is the reference matcher: split both on '/', compare segment by segment, '*'
// standing for exactly one non-empty segment.
func naiveMatch(routeMethod, pattern, method, path string) bool {
	if routeMethod != method {
		return false
	}
	want, got := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if want[i] == "*" {
			if got[i] == "" {
				return false
			}
		} else if want[i] != got[i] {
			return false
		}
	}
	return true
}

const fuzzBase = "http://api.test:8080/base"

// FuzzRouteMatch checks the real matcher against the naive one, and the broker's oracle: a call
// it lets through goes to base_url's scheme, host and port, with the matched bytes as its path.
// Seeds: testdata/fuzz/FuzzRouteMatch.
func FuzzRouteMatch(f *testing.F) {
	base, err := url.Parse(fuzzBase)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, route, method, path string) {
		r, err := profiles.ParseRoute(route)
		if err != nil {
			return
		}
		got := r.Match(method, path)
		if want := naiveMatch(r.Method, r.Pattern, method, path); got != want {
			t.Fatalf("%s vs %s %q: Match says %v, the reference %v", r, method, path, got, want)
		}

		// The oracle, through a real Broker whose upstream records what it was sent.
		var sent []*http.Request
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			sent = append(sent, req)
			return inMemReply(200, ""), nil
		})
		p := &profiles.Profile{Name: "fuzz", BaseURL: base, Routes: []profiles.Route{r},
			Budget: profiles.Budget{Calls: 10}, Limits: profiles.DefaultLimits,
			Credential: profiles.Credential{Header: "Authorization"}}
		run, err := broker.New(broker.Config{Profile: p, Secret: profiles.NewSecret("tok"), Transport: rt})
		if err != nil {
			t.Fatal(err)
		}
		call := broker.Request{Method: method, Path: path}
		valid := broker.Validate(&call, "Authorization") == nil
		resp := run.Call(context.Background(), call)
		switch {
		case !valid:
			if resp.Status != http.StatusBadRequest || len(sent) != 0 {
				t.Fatalf("%s %q is invalid, but the broker answered %d and sent %d requests", method, path, resp.Status, len(sent))
			}
			return
		case !got:
			if resp.Status != http.StatusForbidden || len(sent) != 0 {
				t.Fatalf("%s %q matches no route, but the broker answered %d and sent %d requests", method, path, resp.Status, len(sent))
			}
			return
		}
		if len(sent) != 1 || resp.Status != 200 {
			t.Fatalf("%s %q is granted by %s, but the broker answered %d and sent %d requests", method, path, r, resp.Status, len(sent))
		}
		u := sent[0].URL
		if u.Scheme != base.Scheme || u.Host != base.Host || u.Hostname() != "api.test" || u.Port() != "8080" || sent[0].Host != base.Host {
			t.Fatalf("%s %q went to %s://%s (Host %s), not base_url's %s", method, path, u.Scheme, u.Host, sent[0].Host, base.Host)
		}
		// The request target on the wire: origin-form, the base path, then the matched bytes.
		target := u.RequestURI()
		if target != base.Path+path || !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "//") {
			t.Fatalf("%s %q was sent as %q", method, path, target)
		}
		if wire, err := url.ParseRequestURI(target); err != nil || wire.Host != "" || wire.Scheme != "" {
			t.Fatalf("%s %q: the target %q names a host or scheme (%v)", method, path, target, err)
		}
	})
}

// FuzzDecodeRequest checks the strict envelope decoder: it never panics, accepts no invalid
// UTF-8, refuses only with an InvalidError, and what it accepts survives a re-encode unchanged.
// Seeds: testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := broker.DecodeRequest(raw)
		if err != nil {
			var inv *broker.InvalidError
			if !errors.As(err, &inv) || !errors.Is(err, broker.ErrInvalid) {
				t.Fatalf("refusal is not an InvalidError: %T %v", err, err)
			}
			if strings.ContainsAny(inv.Reason, "\r\n\x00\x1b") {
				t.Fatalf("reason holds raw control characters: %q", inv.Reason)
			}
			return
		}
		if !utf8.Valid(raw) {
			t.Fatalf("accepted invalid UTF-8: %q", raw)
		}
		strs := []string{req.Method, req.Path, req.Query}
		for name, vals := range req.Headers {
			if name != http.CanonicalHeaderKey(name) {
				t.Fatalf("header name %q is not canonical", name)
			}
			strs = append(strs, name)
			strs = append(strs, vals...)
		}
		if !bytes.Contains(raw, []byte("base64")) && !bytes.Contains(raw, []byte(`\`)) {
			strs = append(strs, string(req.Body))
		}
		replacements := 0
		for _, s := range strs {
			if !utf8.ValidString(s) {
				t.Fatalf("decoded invalid UTF-8 %q from %q", s, raw)
			}
			replacements += strings.Count(s, "\uFFFD")
		}
		// A U+FFFD in the result must come from the input, not from a lone surrogate replaced.
		if given := bytes.Count(raw, []byte("\uFFFD")) + strings.Count(strings.ToLower(string(raw)), `\ufffd`); replacements > given {
			t.Fatalf("decoding produced %d U+FFFD from %d in %q", replacements, given, raw)
		}

		again, err := broker.DecodeRequest(reencode(t, req))
		if err != nil {
			t.Fatalf("re-encoded request refused: %v\nfirst: %q", err, raw)
		}
		if !sameRequest(req, again) {
			t.Fatalf("round trip changed the request:\n%#v\n%#v", req, again)
		}
	})
}

func reencode(t *testing.T, req broker.Request) []byte {
	env := map[string]any{"method": req.Method, "path": req.Path, "query": req.Query}
	if req.Headers != nil {
		h := map[string][]string{}
		for k, v := range req.Headers {
			if v == nil {
				v = []string{}
			}
			h[k] = v
		}
		env["headers"] = h
	}
	if len(req.Body) > 0 {
		env["body_base64"] = base64.StdEncoding.EncodeToString(req.Body)
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameRequest compares two requests, with nil and empty alike.
func sameRequest(a, b broker.Request) bool {
	if a.Method != b.Method || a.Path != b.Path || a.Query != b.Query || !bytes.Equal(a.Body, b.Body) ||
		len(a.Headers) != len(b.Headers) {
		return false
	}
	for k, av := range a.Headers {
		bv, ok := b.Headers[k]
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if av[i] != bv[i] {
				return false
			}
		}
	}
	return true
}

// FuzzSummarizeBody holds what an approver is shown to its promises: no rune a screen could hide
// or act on, bounded size, and one summary for two encodings of one JSON value.
func FuzzSummarizeBody(f *testing.F) {
	f.Add([]byte(`{"b":1,"a":"x\u202ey"}`))
	f.Add([]byte("pay\x1b[2J\u0085\x7f now"))
	f.Fuzz(func(t *testing.T, body []byte) {
		s := broker.SummarizeBody(body)
		for _, c := range s {
			if c != ' ' && (!unicode.IsPrint(c) || c == utf8.RuneError) {
				t.Fatalf("summary %q holds %U", s, c)
			}
		}
		if len(s) > broker.MaxSummaryBytes+40 {
			t.Fatalf("summary is %d bytes", len(s))
		}
		var v any
		if json.Unmarshal(body, &v) == nil && json.Valid(body) {
			spaced := append([]byte(" \n"), body...)
			if got := broker.SummarizeBody(spaced); got != s {
				t.Fatalf("%q and %q summarize differently: %q vs %q", body, spaced, s, got)
			}
		}
	})
}
