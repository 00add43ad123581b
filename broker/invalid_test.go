package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

// refusal is one call the broker must answer itself, without touching the upstream.
type refusal struct {
	name    string
	raw     []byte
	outcome broker.Outcome
	reason  string // a distinctive substring of the reason
}

func req(t testing.TB, method, path string, more ...any) []byte {
	t.Helper()
	f := map[string]any{"method": method, "path": path}
	for i := 0; i+1 < len(more); i += 2 {
		f[more[i].(string)] = more[i+1]
	}
	return envelope(t, f)
}

func withHeaders(t testing.TB, h map[string]any) []byte {
	t.Helper()
	return req(t, "GET", "/pets", "headers", h)
}

func refusals(t testing.TB) []refusal {
	inv := func(name string, raw []byte, reason string) refusal {
		return refusal{name, raw, broker.Invalid, reason}
	}
	rawInv := func(name, raw, reason string) refusal { return inv(name, []byte(raw), reason) }
	path := func(name, p, reason string) refusal { return inv(name, req(t, "GET", p), reason) }
	denied := func(name, method, p string) refusal {
		return refusal{name, req(t, method, p), broker.Denied, "no granted route matches " + method + " " + p}
	}
	forbidden := func(name string) refusal {
		return inv("forbidden header "+name, withHeaders(t, map[string]any{name: "x"}), "may not be set by a tool")
	}
	method := func(name, m string) refusal {
		return inv("method "+name, req(t, m, "/pets"), "is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
	}

	many := map[string]any{}
	for i := 0; i < 65; i++ {
		many[fmt.Sprintf("X-H%d", i)] = "v"
	}

	cases := []refusal{
		// Canonical paths.
		path("non-ASCII", "/pets/caf\u00e9", "is not ASCII"),
		path("non-ASCII lookalike slash", "/pets\u2215x", "is not ASCII"),
		path("dot segment", "/pets/./1", `has a "." segment`),
		path("trailing dot segment", "/pets/.", `has a "." segment`),
		path("dot-dot segment", "/pets/../admin", `has a ".." segment`),
		path("leading dot-dot", "/../pets", `has a ".." segment`),
		path("double slash", "/pets//1", "has an empty segment"),
		path("leading double slash", "//evil.example/pets", "has an empty segment"),
		path("trailing slash", "/pets/", "has an empty segment"),
		path("backslash", `/pets\1`, `contains '\\'`),
		path("semicolon", "/pets;jsessionid=1", `contains ';'`),
		path("question mark", "/pets?admin=1", `contains '?'`),
		path("hash", "/pets#frag", `contains '#'`),
		path("NUL", "/pets/\x00", "contains a control character"),
		path("LF", "/pets/1\nHost: evil", "contains a control character"),
		path("CR", "/pets/1\r", "contains a control character"),
		path("ESC", "/pets/\x1b[31m", "contains a control character"),
		path("DEL", "/pets/\x7f", "contains a control character"),
		path("tab", "/pets/\t1", "contains a control character"),
		path("space", "/pets/1 HTTP/1.1", "contains whitespace"),
		path("encoded slash", "/pets/a%2fb", "encoded '/' (%2F)"),
		path("encoded slash upper", "/pets/a%2Fb", "encoded '/' (%2F)"),
		path("encoded backslash", "/pets/a%5cb", "encoded '\\' (%5C)"),
		path("encoded backslash upper", "/pets/a%5Cb", "encoded '\\' (%5C)"),
		path("encoded dot", "/pets/%2e%2e", "encoded '.' (%2E)"),
		path("encoded dot upper", "/pets/%2E", "encoded '.' (%2E)"),
		path("encoded percent", "/pets/%252f", "encoded '%' (%25)"),
		path("bare percent", "/pets/%", "does not start a %XX escape"),
		path("short escape", "/pets/%2", "does not start a %XX escape"),
		path("non-hex escape", "/pets/%zz", "does not start a %XX escape"),
		path("half-hex escape", "/pets/%g1", "does not start a %XX escape"),
		path("empty path", "", "path is empty"),
		path("no leading slash", "pets", "must start with '/'"),
		path("absolute URL as path", "http://evil.example/pets", "must start with '/'"),
		path("over-long path", "/pets/"+strings.Repeat("a", 2100), "over the 2048-byte cap"),

		// Query.
		inv("query space", req(t, "GET", "/pets", "query", "a=b c"), "must be printable ASCII"),
		inv("query hash", req(t, "GET", "/pets", "query", "a=b#c"), "contains '#'"),
		inv("query broken escape", req(t, "GET", "/pets", "query", "a=%zz"), "does not start a %XX escape"),
		inv("query CRLF", req(t, "GET", "/pets", "query", "a=1\r\nX: y"), "must be printable ASCII"),
		inv("query non-ASCII", req(t, "GET", "/pets", "query", "a=\u00e9"), "must be printable ASCII"),
		inv("query over-long", req(t, "GET", "/pets", "query", strings.Repeat("a", 9000)), "over the 8192-byte cap"),

		// Headers the guest may not set, any case, and the credential's own header.
		forbidden("Authorization"), forbidden("authorization"), forbidden("AUTHORIZATION"),
		forbidden("Proxy-Authorization"), forbidden("Cookie"), forbidden("cookie"),
		forbidden("Host"), forbidden("host"), forbidden("Forwarded"),
		forbidden("X-Forwarded-For"), forbidden("x-forwarded-host"), forbidden("X-FORWARDED-PROTO"),
		forbidden("Proxy-Anything"), forbidden("proxy-connection"),
		forbidden("Connection"), forbidden("Keep-Alive"), forbidden("TE"), forbidden("te"),
		forbidden("Trailer"), forbidden("Transfer-Encoding"), forbidden("transfer-encoding"),
		forbidden("Upgrade"), forbidden("Content-Length"), forbidden("content-length"),
		forbidden("Expect"), forbidden("X-Real-IP"), forbidden("Plimsoll-Outcome"),
		forbidden(credHeader), forbidden(strings.ToLower(credHeader)), forbidden(strings.ToUpper(credHeader)),

		// Header names and values.
		inv("header name with space", withHeaders(t, map[string]any{"X Y": "1"}), "is not a valid HTTP token"),
		inv("header name with colon", withHeaders(t, map[string]any{"X:Y": "1"}), "is not a valid HTTP token"),
		inv("header name empty", withHeaders(t, map[string]any{"": "1"}), "is not a valid HTTP token"),
		inv("header name non-ASCII", withHeaders(t, map[string]any{"X-\u00e9": "1"}), "is not a valid HTTP token"),
		inv("header name with CRLF", withHeaders(t, map[string]any{"X-A\r\nHost": "evil"}), "is not a valid HTTP token"),
		inv("header value CR", withHeaders(t, map[string]any{"X-A": "1\rHost: evil"}), "contains a control character"),
		inv("header value LF", withHeaders(t, map[string]any{"X-A": "1\nHost: evil"}), "contains a control character"),
		inv("header value NUL", withHeaders(t, map[string]any{"X-A": "1\x00"}), "contains a control character"),
		inv("header value CRLF in a list", withHeaders(t, map[string]any{"X-A": []string{"ok", "2\r\n"}}), "contains a control character"),
		inv("header value over-long", withHeaders(t, map[string]any{"X-A": strings.Repeat("v", 8193)}), "over the 8192-byte cap"),
		rawInv("header names differing in case", `{"method":"GET","path":"/pets","headers":{"X-Tag":"a","x-tag":"b"}}`, "is given twice"),
		rawInv("header name given twice", `{"method":"GET","path":"/pets","headers":{"X-Tag":"a","X-Tag":"b"}}`, "is given twice"),
		rawInv("header name twice through an escape", `{"method":"GET","path":"/pets","headers":{"X-Tag":"a","X-T\u0061g":"b"}}`, "is given twice"),
		inv("too many headers", withHeaders(t, many), "more than 64 headers"),
		rawInv("header value a number", `{"method":"GET","path":"/pets","headers":{"X-A":1}}`, "must be a string or an array of strings"),
		rawInv("header value null", `{"method":"GET","path":"/pets","headers":{"X-A":null}}`, "must be a string or an array of strings"),
		rawInv("header value an object", `{"method":"GET","path":"/pets","headers":{"X-A":{}}}`, "must be a string or an array of strings"),
		rawInv("header value list of numbers", `{"method":"GET","path":"/pets","headers":{"X-A":["a",2]}}`, "values must be strings"),
		rawInv("header value nested list", `{"method":"GET","path":"/pets","headers":{"X-A":[["a"]]}}`, "values must be strings"),
		rawInv("headers a list", `{"method":"GET","path":"/pets","headers":[]}`, "headers must be an object, not an array"),
		rawInv("headers a string", `{"method":"GET","path":"/pets","headers":"X-A: 1"}`, "headers must be an object, not a string"),

		// Methods.
		method("lower-case", "get"), method("mixed case", "Get"), method("trailing space", "GET "),
		method("empty", ""), method("CONNECT", "CONNECT"), method("TRACE", "TRACE"),
		method("CRLF", "GET\r\n"), method("request line", "GET /admin HTTP/1.1\r\nX:"),

		// Envelope faults.
		rawInv("malformed JSON", `{"method":"GET","path":"/pets",}`, "is not valid JSON"),
		rawInv("single quotes", `{'method':'GET'}`, "is not valid JSON"),
		rawInv("truncated", `{"method":"GET","path":"/pe`, "truncated"),
		rawInv("truncated after a key", `{"method":"GET","path":`, "truncated"),
		rawInv("empty input", ``, "truncated"),
		rawInv("two empty objects", `{}{}`, "has no method"),
		rawInv("trailing object", `{"method":"GET","path":"/pets"}{}`, "has data after its closing '}'"),
		rawInv("trailing garbage", `{"method":"GET","path":"/pets"}x`, "after its closing '}'"),
		rawInv("top-level array", `[{"method":"GET","path":"/pets"}]`, "must be a JSON object"),
		rawInv("top-level string", `"GET /pets"`, "must be a JSON object"),
		rawInv("top-level null", `null`, "must be a JSON object"),
		rawInv("duplicate method", `{"method":"GET","path":"/pets","method":"DELETE"}`, `has the field "method" twice`),
		rawInv("duplicate path through an escape", `{"method":"GET","path":"/pets","p\u0061th":"/admin"}`, `has the field "path" twice`),
		rawInv("duplicate body", `{"method":"POST","path":"/pets","body":"a","body":"b"}`, `has the field "body" twice`),
		rawInv("Method case variant", `{"Method":"GET","path":"/pets"}`, `unknown field "Method"`),
		rawInv("PATH case variant", `{"method":"GET","PATH":"/pets"}`, `unknown field "PATH"`),
		rawInv("unknown url", `{"method":"GET","path":"/pets","url":"http://evil.example/"}`, `unknown field "url"`),
		rawInv("unknown host", `{"method":"GET","path":"/pets","host":"evil.example"}`, `unknown field "host"`),
		rawInv("unknown base_url", `{"method":"GET","path":"/pets","base_url":"http://evil.example/"}`, `unknown field "base_url"`),
		rawInv("missing method", `{"path":"/pets"}`, "has no method"),
		rawInv("missing path", `{"method":"GET"}`, "has no path"),
		rawInv("invalid UTF-8 in a value", "{\"method\":\"GET\",\"path\":\"/pets\",\"body\":\"\xff\xfe\"}", "not valid UTF-8"),
		rawInv("invalid UTF-8 in a key", "{\"method\":\"GET\",\"path\":\"/pets\",\"\xc0\xaf\":1}", "not valid UTF-8"),
		rawInv("overlong UTF-8 slash", "{\"method\":\"GET\",\"path\":\"/pets\xc0\xaf..\"}", "not valid UTF-8"),
		rawInv("lone high surrogate", `{"method":"GET","path":"/pets","body":"\ud800"}`, `lone high surrogate \uD800`),
		rawInv("lone low surrogate", `{"method":"GET","path":"/pets","body":"\udc00"}`, `lone low surrogate \uDC00`),
		rawInv("high surrogate then a letter", `{"method":"GET","path":"/pets","body":"\uD83D\u0041"}`, "lone high surrogate"),
		rawInv("two high surrogates", `{"method":"GET","path":"/pets","body":"\uD83D\uD83D"}`, "lone high surrogate"),
		rawInv("lone surrogate in a header", `{"method":"GET","path":"/pets","headers":{"X-A":"\udfff"}}`, "lone low surrogate"),
		rawInv("lone surrogate at the end", `{"method":"GET","path":"/pets","body":"x\ud800"}`, "lone high surrogate"),
		rawInv("both body and body_base64", `{"method":"POST","path":"/pets","body":"a","body_base64":"YQ=="}`, "has both body and body_base64"),
		rawInv("bad base64", `{"method":"POST","path":"/pets","body_base64":"!!!!"}`, "not valid standard base64"),
		rawInv("unpadded base64", `{"method":"POST","path":"/pets","body_base64":"YWI"}`, "not valid standard base64"),
		rawInv("URL-safe base64", `{"method":"POST","path":"/pets","body_base64":"-_-_"}`, "not valid standard base64"),
		rawInv("base64 with non-zero pad bits", `{"method":"POST","path":"/pets","body_base64":"YR=="}`, "not valid standard base64"),
		rawInv("method a number", `{"method":1,"path":"/pets"}`, "method must be a string, not a number"),
		rawInv("method null", `{"method":null,"path":"/pets"}`, "method must be a string, not null"),
		rawInv("path an array", `{"method":"GET","path":["/pets"]}`, "path must be a string, not an array"),
		rawInv("query an object", `{"method":"GET","path":"/pets","query":{"a":"b"}}`, "query must be a string, not an object"),
		rawInv("body a number", `{"method":"POST","path":"/pets","body":5}`, "body must be a string, not a number"),
		rawInv("body_base64 a boolean", `{"method":"POST","path":"/pets","body_base64":true}`, "body_base64 must be a string, not a boolean"),

		// Denied by the grant.
		denied("wrong method for a granted path", "DELETE", "/pets"),
		denied("HEAD is not GET", "HEAD", "/pets"),
		denied("ungranted path", "GET", "/owners"),
		denied("ungranted deeper path", "GET", "/pets/1/toys/2"),
		denied("case variant of a granted route", "GET", "/Pets"),
		denied("case variant of a wildcard route", "GET", "/PETS/1"),
		denied("wildcard against two segments", "GET", "/pets/1/2"),
		denied("wildcard against zero segments", "PUT", "/pets"),
		path("wildcard against an empty segment", "/pets//toys", "has an empty segment"),
		denied("root is not granted", "GET", "/"),
		denied("encoded slash-alike stays one segment", "GET", "/pets%3F/toys"),
	}
	return cases
}

func TestRefusalsNeverReachTheUpstream(t *testing.T) {
	api := newUpstream(t, nil)
	p := writeProfile(t, api.URL+"/v1", petRoutes)
	for _, tc := range refusals(t) {
		t.Run(tc.name, func(t *testing.T) {
			run := newRun(t, p, nil)
			g := call(t, run, tc.raw)

			status := http.StatusBadRequest
			want := broker.Counters{HostCalls: 1, Invalid: 1}
			if tc.outcome == broker.Denied {
				status = http.StatusForbidden
				want = broker.Counters{HostCalls: 1, Denied: 1}
			}
			assert.Equal(t, status, g.Status)
			assert.Equal(t, []string{string(tc.outcome)}, g.Headers[broker.OutcomeHeader])
			assert.Equal(t, []string{"application/json"}, g.Headers["Content-Type"])
			body := g.own(t)
			assert.Equal(t, string(tc.outcome), body.Error)
			assert.Contains(t, body.Reason, tc.reason)
			assert.Equal(t, want, run.Counters())

			trace := run.Trace()
			require.Len(t, trace, 1)
			e := trace[0]
			assert.Equal(t, 1, e.Seq)
			assert.Equal(t, tc.outcome, e.Outcome)
			assert.Equal(t, status, e.Status)
			assert.Zero(t, e.UpstreamStatus)
			assert.Empty(t, e.Route)
			assert.Equal(t, body.Reason, e.Reason)
			lines := traceLines(t, run)
			var back broker.TraceEntry
			require.NoError(t, json.Unmarshal([]byte(lines[0]), &back))
			assert.Equal(t, e, back)

			a := run.Finish(broker.StatusOK, nil)
			assert.Equal(t, want, a.Counters)
			api.untouched(t, "a refused call must not reach the upstream")
		})
	}
}

// TestRefusalReasonsAreEscaped sends guest text full of line breaks and terminal escapes: every
// reason is a printable one-liner, in the guest's answer, in the trace and on the audit line.
func TestRefusalReasonsAreEscaped(t *testing.T) {
	api := newUpstream(t, nil)
	p := writeProfile(t, api.URL, petRoutes)
	run := newRun(t, p, nil)
	nasty := "x\r\n{\"seq\":99,\"outcome\":\"forwarded\"}\n\x1b[2J\u2028"
	raws := [][]byte{
		req(t, nasty, "/pets"),
		req(t, "GET", "/pets/"+nasty),
		req(t, "GET", "/pets", "query", nasty),
		withHeaders(t, map[string]any{nasty: "1"}),
		withHeaders(t, map[string]any{"X-A": nasty}),
		envelope(t, map[string]any{"method": "GET", "path": "/pets", nasty: 1}),
		[]byte("{\"method\":\"GET\",\"path\":\"/pets\"}\r\n\x1b[0m"),
		[]byte("\x1b[31m{"),
	}
	for _, raw := range raws {
		resp := run.CallEnvelope(context.Background(), raw)
		require.NotContains(t, string(resp), "\n")
		g := decodeEnvelope(t, resp)
		require.Equal(t, http.StatusBadRequest, g.Status, "%q", raw)
		reason := g.own(t).Reason
		for _, c := range []string{"\r", "\n", "\x1b", "\u2028"} {
			assert.NotContains(t, reason, c, "reason %q for %q", reason, raw)
		}
	}
	lines := traceLines(t, run)
	assert.Len(t, lines, len(raws))
	for _, l := range lines {
		assert.NotContains(t, l, `"seq":99`)
	}
	line := run.Finish(broker.StatusError, fmt.Errorf("tool threw: %s", nasty)).Line()
	assert.Equal(t, 1, strings.Count(string(line), "\n"))
	assert.True(t, strings.HasSuffix(string(line), "\n"))
	assert.NotContains(t, string(line), "\r")
	assert.NotContains(t, string(line), "\x1b")
	api.untouched(t)
}

// TestCallValidatesBuiltRequests feeds Call requests built in Go rather than decoded: header
// names in a non-canonical case must not slip past the forbidden list, or sit next to the
// broker's own credential header.
func TestCallValidatesBuiltRequests(t *testing.T) {
	api := newUpstream(t, nil)
	p := writeProfile(t, api.URL, petRoutes)
	for name, h := range map[string]http.Header{
		"lower-case authorization":  {"authorization": {"Bearer guest"}},
		"lower-case credential":     {"x-api-key": {"guest"}},
		"lower-case host":           {"host": {"evil.example"}},
		"lower-case content-length": {"content-length": {"5"}},
		"transfer-encoding":         {"transfer-encoding": {"chunked"}},
		"two spellings of one name": {"X-Tag": {"a"}, "x-tag": {"b"}},
	} {
		t.Run(name, func(t *testing.T) {
			run := newRun(t, p, nil)
			resp := run.Call(context.Background(), broker.Request{Method: "GET", Path: "/pets", Headers: h})
			assert.Equal(t, http.StatusBadRequest, resp.Status)
			assert.Contains(t, string(resp.Body), "not in canonical form")
			assert.Equal(t, broker.Counters{HostCalls: 1, Invalid: 1}, run.Counters())
			api.untouched(t)
		})
	}
}

func TestValidate(t *testing.T) {
	ok := broker.Request{Method: "PATCH", Path: "/a/b%20c/~d", Query: "x=1&y=%2F", Headers: http.Header{"X-A": {"1", "2"}}}
	assert.NoError(t, broker.Validate(&ok, credHeader))
	assert.NoError(t, broker.CheckPath("/"))
	err := broker.CheckPath("/a/../b")
	assert.ErrorIs(t, err, broker.ErrInvalid)
	var inv *broker.InvalidError
	require.ErrorAs(t, err, &inv)
	assert.Contains(t, inv.Reason, `".."`)
}
