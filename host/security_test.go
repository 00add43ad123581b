package host_test

// The security suite (issue 6): hostile guests and hostile inputs, end to end. Every case runs a
// real guest (JavaScript, or the Go test guest where raw bytes and pointers matter) in the real
// host.Runtime against a recording upstream on 127.0.0.1, and checks what the guest saw, what
// reached the upstream (nothing, for a refusal), the audit line and trace, that the credential
// shows up nowhere it should not, and that nothing is left running. SECURITY.md describes the
// threat model these cases stand for.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/profiles"
)

// The classes of the suite, as SECURITY.md lists them.
const (
	paths     = "paths"
	headers   = "headers"
	envelope  = "envelope"
	methods   = "methods"
	upstream  = "upstream"
	resources = "resources"
	isolation = "isolation"
	audit     = "audit"
)

// secCase is one line of the suite.
type secCase struct {
	class string
	name  string
	js    string         // a JavaScript tool (the body of an async function), run after jsPrelude
	cmd   map[string]any // or a Go test guest command
	lim   lim            // profile limits for this case

	want   string          // what the guest saw: " | "-separated parts, in order (see guestView)
	calls  broker.Counters // the audit line's counters; the upstream must have received exactly
	status broker.Status   // Forwarded+Failed requests. status "" means ok
	err    string          // part of the run's error (and the audit's error); "" means none
	sent   string          // when set, the request target the upstream must have received

	tool   string                                            // the tool's name, when it matters
	cancel bool                                              // cancel the run once the upstream has the request
	hold   bool                                              // the upstream holds the request until the broker drops it
	check  func(t *testing.T, res host.Result, up *recorder) // anything else
}

// Counters of the common one-call outcomes.
var (
	none    = broker.Counters{}
	fwd1    = broker.Counters{HostCalls: 1, Forwarded: 1}
	invalid = broker.Counters{HostCalls: 1, Invalid: 1}
	denied  = broker.Counters{HostCalls: 1, Denied: 1}
	failed  = broker.Counters{HostCalls: 1, Failed: 1}
)

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// get is a tool that GETs path through the preamble and shows the answer.
func get(path string) string { return fmt.Sprintf(`return show(await api.get(%s));`, jsString(path)) }

// getH is get with headers, given as a JavaScript object literal.
func getH(path, headers string) string {
	return fmt.Sprintf(`return show(await api.get(%s, {headers: %s}));`, jsString(path), headers)
}

// rawJS is a tool that sends text as the request envelope, bypassing the preamble.
func rawJS(text string) string { return fmt.Sprintf(`return show(await raw(%s));`, jsString(text)) }

// goCall is a Go guest command that sends envelope once and prints the response envelope.
func goCall(envelope string) map[string]any {
	return map[string]any{"op": "call", "n": 1, "envelope": envelope, "cap": 1 << 16, "print": true}
}

// goCallBytes sends an envelope that JSON text cannot carry (invalid UTF-8).
func goCallBytes(envelope []byte) map[string]any {
	return map[string]any{"op": "call", "n": 1, "envelope_base64": base64.StdEncoding.EncodeToString(envelope),
		"cap": 1 << 16, "print": true}
}

// goRaw calls host_call with exact i32 arguments; -1 as a pointer is the guest's own buffer.
func goRaw(args ...int64) map[string]any { return map[string]any{"op": "raw", "args": args} }

// retryAfterTwice calls an upstream that answers 503 with a Retry-After, twice, and shows both.
func retryAfterTwice(name string) string {
	return fmt.Sprintf(`
		const show2 = (r) => r.status + " " + r.outcome + " [" + r.headers["retry-after"] + "]";
		const a = await api.get("/fault/retry-after-%[1]s");
		const b = await api.get("/fault/retry-after-%[1]s");
		return show2(a) + " then " + show2(b);`, name)
}

var secCases = []secCase{
	// 1. Paths: the broker never cleans a path; anything not canonical is refused, and the bytes
	// matched are the bytes sent.
	{class: paths, name: "dot-dot segment", js: get("/pets/../admin"), want: `400 invalid | has a ".." segment`, calls: invalid},
	{class: paths, name: "dot segment", js: get("/pets/./1"), want: `400 invalid | has a "." segment`, calls: invalid},
	{class: paths, name: "trailing dot-dot", js: get("/pets/1/.."), want: `400 invalid | has a ".." segment`, calls: invalid},
	{class: paths, name: "encoded dot-dot %2e%2e", js: get("/pets/%2e%2e/admin"), want: `400 invalid | encoded '.' (%2E)`, calls: invalid},
	{class: paths, name: "mixed .%2E", js: get("/pets/.%2E/admin"), want: `400 invalid | encoded '.' (%2E)`, calls: invalid},
	{class: paths, name: "double-encoded %252e", js: get("/pets/%252e%252e/admin"), want: `400 invalid | encoded '%' (%25)`, calls: invalid},
	{class: paths, name: "encoded slash %2f", js: get("/pets/1%2f..%2fadmin"), want: `400 invalid | encoded '/' (%2F)`, calls: invalid},
	{class: paths, name: "encoded backslash %5c", js: get("/pets/1%5C..%5Cadmin"), want: `400 invalid | encoded '\' (%5C)`, calls: invalid},
	{class: paths, name: "backslash", js: get(`/pets/1\..\admin`), want: `400 invalid | contains '\\'`, calls: invalid},
	{class: paths, name: "leading double slash", js: get("//pets/1"), want: `400 invalid | empty segment`, calls: invalid},
	{class: paths, name: "inner double slash", js: get("/pets//1"), want: `400 invalid | empty segment`, calls: invalid},
	{class: paths, name: "dot-dot-semicolon", js: get("/pets/..;/admin"), want: `400 invalid | contains ';'`, calls: invalid},
	{class: paths, name: "semicolon parameter", js: get("/pets/1;jsessionid=abc"), want: `400 invalid | contains ';'`, calls: invalid},
	{class: paths, name: "question mark inside the path field", js: rawJS(`{"method":"GET","path":"/pets/1?x=/../admin"}`), want: `400 invalid | contains '?'`, calls: invalid},
	{class: paths, name: "question mark split off by the preamble", js: get("/pets/1?next=..%2Fadmin"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/1?next=..%2Fadmin"},
	{class: paths, name: "hash inside the path", js: get("/pets/1#/../admin"), want: `400 invalid | contains '#'`, calls: invalid},
	{class: paths, name: "non-ASCII", js: get("/pets/é"), want: `400 invalid | is not ASCII`, calls: invalid},
	{class: paths, name: "fullwidth dots", js: get("/pets/\uff0e\uff0e/admin"), want: `400 invalid | is not ASCII`, calls: invalid},
	{class: paths, name: "percent-encoded overlong dots", js: get("/pets/%c0%ae%c0%ae"), want: `400 invalid | do not decode to valid UTF-8`, calls: invalid},
	{class: paths, name: "percent-encoded 3-byte overlong dot", js: get("/pets/%e0%80%ae"), want: `400 invalid | do not decode to valid UTF-8`, calls: invalid},
	{class: paths, name: "percent-encoded fullwidth dots", js: get("/pets/%EF%BC%8E%EF%BC%8E"), want: `400 invalid | contains an encoded U+FF0E`, calls: invalid},
	{class: paths, name: "percent-encoded fullwidth solidus", js: get("/pets/1%ef%bc%8fadmin"), want: `400 invalid | contains an encoded U+FF0F`, calls: invalid},
	{class: paths, name: "percent-encoded non-ASCII letter is data", js: get("/pets/Jos%C3%A9"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/Jos%C3%A9"},
	{class: paths, name: "raw overlong bytes", cmd: goCallBytes([]byte("{\"method\":\"GET\",\"path\":\"/pets/\xc0\xae\xc0\xae\"}")), want: `400 invalid | not valid UTF-8`, calls: invalid},
	{class: paths, name: "NUL", js: get("/pets/1\x00"), want: `400 invalid | control character`, calls: invalid},
	{class: paths, name: "CR LF", js: get("/pets/1\r\nHost: evil.test"), want: `400 invalid | control character`, calls: invalid},
	{class: paths, name: "TAB", js: get("/pets/\t1"), want: `400 invalid | control character`, calls: invalid},
	{class: paths, name: "space", js: get("/pets/a b"), want: `400 invalid | whitespace`, calls: invalid},
	{class: paths, name: "empty", js: get(""), want: `400 invalid | path is empty`, calls: invalid},
	{class: paths, name: "no leading slash", js: get("pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: "very long", js: `return show(await api.get("/pets/" + "a".repeat(3000)));`, want: `400 invalid | over the 2048-byte cap`, calls: invalid},
	{class: paths, name: "many segments", js: `return show(await api.get("/pets" + "/x".repeat(1000)));`, want: `403 denied | no granted route matches GET /pets/x/x`, calls: denied},
	{class: paths, name: "full URL", js: get("http://evil.test/pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: "full URL of the upstream itself", js: get("http://127.0.0.1/v1/pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: "scheme-relative", js: get("//evil.test/pets/1"), want: `400 invalid | empty segment`, calls: invalid},
	{class: paths, name: "@host", js: get("@evil.test/pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: "@host inside a segment stays a path", js: get("/pets/1@evil.test"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/1@evil.test"},
	{class: paths, name: ".host", js: get(".evil.test/pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: ":port", js: get(":8080/pets/1"), want: `400 invalid | must start with '/'`, calls: invalid},
	{class: paths, name: ":port inside a segment stays a path", js: get("/pets/1:8080"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/1:8080"},
	{class: paths, name: "upper-case route", js: get("/PETS/1"), want: `403 denied | no granted route matches GET /PETS/1`, calls: denied},
	{class: paths, name: "mixed-case route", js: get("/Pets/1"), want: `403 denied | no granted route matches GET /Pets/1`, calls: denied},
	{class: paths, name: "star against an empty last segment", js: get("/pets/"), want: `400 invalid | empty segment`, calls: invalid},
	{class: paths, name: "star against an empty inner segment", js: get("/pets//toys"), want: `400 invalid | empty segment`, calls: invalid},
	{class: paths, name: "star against two segments", js: get("/pets/1/2"), want: `403 denied`, calls: denied},
	{class: paths, name: "inner star against two segments", js: get("/pets/1/2/toys"), want: `403 denied`, calls: denied},
	{class: paths, name: "escapes are sent as given", js: get("/pets/a%20b%3Fc%23d"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/a%20b%3Fc%23d"},
	{class: paths, name: "stray percent", js: get("/pets/100%"), want: `400 invalid | does not start a %XX escape`, calls: invalid},

	// 2. Headers: the broker owns credentials, routing and framing; a guest that sets one is
	// refused, never overwritten.
	{class: headers, name: "Authorization", js: getH("/pets/1", `{Authorization: "Bearer stolen"}`), want: `400 invalid | header Authorization may not be set`, calls: invalid},
	{class: headers, name: "authorization, lower case", js: getH("/pets/1", `{authorization: "Bearer stolen"}`), want: `400 invalid | header Authorization may not be set`, calls: invalid},
	{class: headers, name: "Proxy-Authorization", js: getH("/pets/1", `{"Proxy-Authorization": "Basic eA=="}`), want: `400 invalid | header Proxy-Authorization may not be set`, calls: invalid},
	{class: headers, name: "Cookie", js: getH("/pets/1", `{Cookie: "session=1"}`), want: `400 invalid | header Cookie may not be set`, calls: invalid},
	{class: headers, name: "the credential's own header", js: getH("/pets/1", `{"X-Api-Key": "Token guess"}`), want: `400 invalid | header X-Api-Key may not be set`, calls: invalid},
	{class: headers, name: "the credential's own header, lower case", js: getH("/pets/1", `{"x-api-key": "Token guess"}`), want: `400 invalid | header X-Api-Key may not be set`, calls: invalid},
	{class: headers, name: "Host", js: getH("/pets/1", `{Host: "evil.test"}`), want: `400 invalid | header Host may not be set`, calls: invalid},
	{class: headers, name: "Forwarded", js: getH("/pets/1", `{Forwarded: "for=1.2.3.4;host=evil.test"}`), want: `400 invalid | header Forwarded may not be set`, calls: invalid},
	{class: headers, name: "X-Forwarded-For", js: getH("/pets/1", `{"X-Forwarded-For": "127.0.0.1"}`), want: `400 invalid | header X-Forwarded-For may not be set`, calls: invalid},
	{class: headers, name: "X-Forwarded-Host", js: getH("/pets/1", `{"x-forwarded-host": "evil.test"}`), want: `400 invalid | header X-Forwarded-Host may not be set`, calls: invalid},
	{class: headers, name: "X-Real-IP", js: getH("/pets/1", `{"X-Real-IP": "127.0.0.1"}`), want: `400 invalid | header X-Real-Ip may not be set`, calls: invalid},
	{class: headers, name: "Connection", js: getH("/pets/1", `{Connection: "close, X-Api-Key"}`), want: `400 invalid | header Connection may not be set`, calls: invalid},
	{class: headers, name: "Keep-Alive", js: getH("/pets/1", `{"Keep-Alive": "timeout=5"}`), want: `400 invalid | header Keep-Alive may not be set`, calls: invalid},
	{class: headers, name: "TE", js: getH("/pets/1", `{TE: "trailers"}`), want: `400 invalid | header Te may not be set`, calls: invalid},
	{class: headers, name: "Upgrade", js: getH("/pets/1", `{Upgrade: "websocket"}`), want: `400 invalid | header Upgrade may not be set`, calls: invalid},
	{class: headers, name: "Transfer-Encoding", js: getH("/pets/1", `{"Transfer-Encoding": "chunked"}`), want: `400 invalid | header Transfer-Encoding may not be set`, calls: invalid},
	{class: headers, name: "Content-Length", js: getH("/pets/1", `{"Content-Length": "0"}`), want: `400 invalid | header Content-Length may not be set`, calls: invalid},
	{class: headers, name: "Trailer", js: getH("/pets/1", `{Trailer: "X-Api-Key"}`), want: `400 invalid | header Trailer may not be set`, calls: invalid},
	{class: headers, name: "Expect", js: getH("/pets/1", `{Expect: "100-continue"}`), want: `400 invalid | header Expect may not be set`, calls: invalid},
	{class: headers, name: "Proxy-Connection", js: getH("/pets/1", `{"Proxy-Connection": "keep-alive"}`), want: `400 invalid | header Proxy-Connection may not be set`, calls: invalid},
	{class: headers, name: "Plimsoll-Outcome", js: getH("/pets/1", `{"Plimsoll-Outcome": "denied"}`), want: `400 invalid | header Plimsoll-Outcome may not be set`, calls: invalid},
	{class: headers, name: "CR LF in a value", js: getH("/pets/1", `{"X-A": "1\r\nX-Api-Key: Token x"}`), want: `400 invalid | header X-A value contains a control character`, calls: invalid},
	{class: headers, name: "bare LF in a value", js: getH("/pets/1", `{"X-A": "1\nX-B: 2"}`), want: `400 invalid | header X-A value contains a control character`, calls: invalid},
	{class: headers, name: "NUL in a value", js: getH("/pets/1", `{"X-A": "1\u0000"}`), want: `400 invalid | header X-A value contains a control character`, calls: invalid},
	{class: headers, name: "CR LF in one of several values", js: getH("/pets/1", `{"X-A": ["ok", "bad\r\n"]}`), want: `400 invalid | control character`, calls: invalid},
	{class: headers, name: "CR LF in a name", js: getH("/pets/1", `{"X-A\r\nX-B": "1"}`), want: `400 invalid | is not a valid HTTP token`, calls: invalid},
	{class: headers, name: "NUL in a name", js: getH("/pets/1", `{"X-A\u0000": "1"}`), want: `400 invalid | is not a valid HTTP token`, calls: invalid},
	{class: headers, name: "space in a name", js: getH("/pets/1", `{"X A": "1"}`), want: `400 invalid | is not a valid HTTP token`, calls: invalid},
	{class: headers, name: "colon in a name", js: getH("/pets/1", `{"Host:": "evil.test"}`), want: `400 invalid | is not a valid HTTP token`, calls: invalid},
	{class: headers, name: "empty name", js: getH("/pets/1", `{"": "1"}`), want: `400 invalid | is not a valid HTTP token`, calls: invalid},
	{class: headers, name: "non-ASCII name", js: getH("/pets/1", `{"X-É": "1"}`), want: `400 invalid | is not a valid HTTP token`, calls: invalid},
	{class: headers, name: "duplicate names differing in case", js: getH("/pets/1", `{"X-Tag": "a", "x-tag": "b"}`), want: `400 invalid | is given twice`, calls: invalid},
	{class: headers, name: "the credential header twice, in two cases", js: getH("/pets/1", `{"x-api-key": "a", "X-API-KEY": "b"}`), want: `400 invalid`, calls: invalid},
	{class: headers, name: "65 headers", js: `const h = {}; for (let i = 0; i < 65; i++) h["X-H" + i] = "v"; return show(await api.get("/pets/1", {headers: h}));`, want: `400 invalid | more than 64 headers`, calls: invalid},
	{class: headers, name: "64 headers pass", js: `const h = {}; for (let i = 0; i < 64; i++) h["X-H" + i] = "v"; return show(await api.get("/pets/1", {headers: h}));`, want: `200 forwarded`, calls: fwd1,
		check: func(t *testing.T, _ host.Result, up *recorder) {
			require.Equal(t, "v", up.requests()[0].Header.Get("X-H63"))
		}},
	{class: headers, name: "oversized value", js: getH("/pets/1", `{"X-Big": "v".repeat(8193)}`), want: `400 invalid | header X-Big value is 8193 bytes, over the 8192-byte cap`, calls: invalid},
	{class: headers, name: "ordinary headers pass, beside the credential", js: getH("/pets/1", `{"X-Request-Id": "abc", Accept: "application/json"}`), want: `200 forwarded`, calls: fwd1,
		check: func(t *testing.T, _ host.Result, up *recorder) {
			h := up.requests()[0].Header
			require.Equal(t, "abc", h.Get("X-Request-Id"))
			require.Equal(t, "application/json", h.Get("Accept"))
		}},

	// 3. Envelope: decoded strictly; anything ambiguous is refused before the grant is consulted.
	{class: envelope, name: "truncated", js: rawJS(`{"method":"GET","path":"/pets/1"`), want: `400 invalid | request envelope is truncated`, calls: invalid},
	{class: envelope, name: "not JSON", js: rawJS(`GET /pets/1 HTTP/1.1`), want: `400 invalid | not valid JSON`, calls: invalid},
	{class: envelope, name: "empty", js: rawJS(``), want: `400 invalid | truncated`, calls: invalid},
	{class: envelope, name: "{}{}", js: rawJS(`{}{}`), want: `400 invalid | has no method`, calls: invalid},
	{class: envelope, name: "a second object", js: rawJS(`{"method":"GET","path":"/pets/1"}{"method":"DELETE","path":"/pets/1"}`), want: `400 invalid | data after its closing '}'`, calls: invalid},
	{class: envelope, name: "top level array", js: rawJS(`[{"method":"GET","path":"/pets/1"}]`), want: `400 invalid | must be a JSON object`, calls: invalid},
	{class: envelope, name: "top level string", js: rawJS(`"GET /pets/1"`), want: `400 invalid | must be a JSON object`, calls: invalid},
	{class: envelope, name: "top level null", js: rawJS(`null`), want: `400 invalid | must be a JSON object`, calls: invalid},
	{class: envelope, name: "duplicate path", js: rawJS(`{"method":"GET","path":"/pets/1","path":"/admin"}`), want: `400 invalid | the field "path" twice`, calls: invalid},
	{class: envelope, name: "duplicate method", js: rawJS(`{"method":"GET","method":"DELETE","path":"/pets/1"}`), want: `400 invalid | the field "method" twice`, calls: invalid},
	{class: envelope, name: "case variant Method", js: rawJS(`{"method":"GET","Method":"DELETE","path":"/pets/1"}`), want: `400 invalid | unknown field "Method"`, calls: invalid},
	{class: envelope, name: "unknown url", js: rawJS(`{"method":"GET","path":"/pets/1","url":"http://evil.test/"}`), want: `400 invalid | unknown field "url"`, calls: invalid},
	{class: envelope, name: "unknown host", js: rawJS(`{"method":"GET","path":"/pets/1","host":"evil.test"}`), want: `400 invalid | unknown field "host"`, calls: invalid},
	{class: envelope, name: "unknown base_url", js: rawJS(`{"base_url":"http://evil.test","method":"GET","path":"/pets/1"}`), want: `400 invalid | unknown field "base_url"`, calls: invalid},
	{class: envelope, name: "duplicate header key", js: rawJS(`{"method":"GET","path":"/pets/1","headers":{"X-A":"1","X-A":"2"}}`), want: `400 invalid | header "X-A" is given twice`, calls: invalid},
	{class: envelope, name: "lone high surrogate", js: rawJS(`{"method":"GET","path":"/pets/\ud800"}`), want: `400 invalid | lone high surrogate`, calls: invalid},
	{class: envelope, name: "lone low surrogate", js: rawJS(`{"method":"GET","path":"/pets/1","headers":{"X-A":"\udc00"}}`), want: `400 invalid | lone low surrogate`, calls: invalid},
	{class: envelope, name: "surrogates in the wrong order", js: rawJS(`{"method":"GET","path":"/pets/1","body":"\udc00\ud800"}`), want: `400 invalid | lone low surrogate`, calls: invalid},
	{class: envelope, name: "invalid UTF-8 in the path", cmd: goCallBytes([]byte("{\"method\":\"GET\",\"path\":\"/pets/\xff\"}")), want: `400 invalid | not valid UTF-8`, calls: invalid},
	{class: envelope, name: "invalid UTF-8 in a header value", cmd: goCallBytes([]byte("{\"method\":\"GET\",\"path\":\"/pets/1\",\"headers\":{\"X-A\":\"\xfe\"}}")), want: `400 invalid | not valid UTF-8`, calls: invalid},
	{class: envelope, name: "invalid UTF-8 in a body", cmd: goCallBytes([]byte("{\"method\":\"POST\",\"path\":\"/pets\",\"body\":\"\xed\xa0\x80\"}")), want: `400 invalid | not valid UTF-8`, calls: invalid},
	{class: envelope, name: "over max_request_bytes, JavaScript", js: `return show(await api.post("/pets", "x".repeat(1100000)));`, want: `400 invalid | over limits.max_request_bytes (1MiB)`, calls: invalid},
	{class: envelope, name: "over max_request_bytes, Go guest", lim: lim{"max_request_bytes": "1KiB"}, cmd: goCall(`{"method":"POST","path":"/pets","body":"` + strings.Repeat("x", 1100) + `"}`), want: `400 invalid | over limits.max_request_bytes (1KiB)`, calls: invalid},
	{class: envelope, name: "bad body_base64", js: rawJS(`{"method":"POST","path":"/pets","body_base64":"!!!!"}`), want: `400 invalid | body_base64 is not valid standard base64`, calls: invalid},
	{class: envelope, name: "body_base64 without padding", js: rawJS(`{"method":"POST","path":"/pets","body_base64":"aGk"}`), want: `400 invalid | body_base64 is not valid standard base64`, calls: invalid},
	{class: envelope, name: "body and body_base64", js: rawJS(`{"method":"POST","path":"/pets","body":"a","body_base64":"YQ=="}`), want: `400 invalid | both body and body_base64`, calls: invalid},
	{class: envelope, name: "method of the wrong type", js: rawJS(`{"method":1,"path":"/pets/1"}`), want: `400 invalid | method must be a string, not a number`, calls: invalid},
	{class: envelope, name: "headers of the wrong type", js: rawJS(`{"method":"GET","path":"/pets/1","headers":["X-A: 1"]}`), want: `400 invalid | headers must be an object, not an array`, calls: invalid},
	{class: envelope, name: "null body", js: rawJS(`{"method":"POST","path":"/pets","body":null}`), want: `400 invalid | body must be a string, not null`, calls: invalid},
	{class: envelope, name: "deep nesting", js: `return show(await raw('{"method":"GET","path":"/pets/1","headers":{"X":' + "[".repeat(10000) + "]".repeat(10000) + "}}"));`, want: `400 invalid`, calls: invalid},
	{class: envelope, name: "binary body_base64 arrives byte for byte", js: rawJS(`{"method":"POST","path":"/pets","body_base64":"/wDArg=="}`), want: `200 forwarded`, calls: fwd1,
		check: func(t *testing.T, _ host.Result, up *recorder) {
			require.Equal(t, []byte{0xff, 0x00, 0xc0, 0xae}, up.requests()[0].Body)
		}},

	// 4. Methods: an upper-case token from a fixed list, matched exactly against the grant.
	{class: methods, name: "lower case through the preamble", js: `return show(await api.call("get", "/pets/1"));`, want: `200 forwarded ok GET /v1/pets/1`, calls: fwd1},
	{class: methods, name: "lower case", js: rawJS(`{"method":"get","path":"/pets/1"}`), want: `400 invalid | method "get" is not one of`, calls: invalid},
	{class: methods, name: "trailing space", js: rawJS(`{"method":"GET ","path":"/pets/1"}`), want: `400 invalid | method "GET " is not one of`, calls: invalid},
	{class: methods, name: "empty", js: rawJS(`{"method":"","path":"/pets/1"}`), want: `400 invalid | method "" is not one of`, calls: invalid},
	{class: methods, name: "CONNECT", js: rawJS(`{"method":"CONNECT","path":"/pets/1"}`), want: `400 invalid | method "CONNECT" is not one of`, calls: invalid},
	{class: methods, name: "TRACE", js: rawJS(`{"method":"TRACE","path":"/pets/1"}`), want: `400 invalid | method "TRACE" is not one of`, calls: invalid},
	{class: methods, name: "PROPFIND", js: rawJS(`{"method":"PROPFIND","path":"/pets/1"}`), want: `400 invalid | method "PROPFIND" is not one of`, calls: invalid},
	{class: methods, name: "CR LF", js: rawJS(`{"method":"GET /admin HTTP/1.1\r\nX-A: 1\r\n","path":"/pets/1"}`), want: `400 invalid | method "GET /admin HTTP/1.1\r\nX-A: 1\r\n" is not one of`, calls: invalid},
	{class: methods, name: "NUL", js: rawJS(`{"method":"GET\u0000","path":"/pets/1"}`), want: `400 invalid | method "GET\x00" is not one of`, calls: invalid},
	{class: methods, name: "CONNECT through the preamble", js: `return show(await api.call("CONNECT", "evil.test:443"));`, status: broker.StatusError, err: `unsupported method "CONNECT"`, calls: none},
	{class: methods, name: "a valid method the grant lacks", js: rawJS(`{"method":"DELETE","path":"/pets/1"}`), want: `403 denied | no granted route matches DELETE /pets/1`, calls: denied},
	{class: methods, name: "HEAD on a GET route", js: rawJS(`{"method":"HEAD","path":"/pets/1"}`), want: `403 denied | no granted route matches HEAD /pets/1`, calls: denied},

	// 5. Upstream faults: the upstream is semi-trusted. Redirects are not followed, bodies are
	// capped whatever the framing says, and every failure is a 502/504 the guest can read.
	{class: upstream, name: "redirect to another host", js: get("/fault/redirect-host"), want: `302 forwarded`, calls: fwd1, check: locationHeld},
	{class: upstream, name: "redirect to another scheme", js: get("/fault/redirect-scheme"), want: `307 forwarded`, calls: fwd1, check: locationHeld},
	{class: upstream, name: "redirect to another port", js: get("/fault/redirect-port"), want: `301 forwarded`, calls: fwd1, check: locationHeld},
	{class: upstream, name: "redirect on the same host", js: get("/fault/redirect-path"), want: `303 forwarded`, calls: fwd1},
	{class: upstream, name: "body over the cap, honest Content-Length", js: get("/fault/big-honest"), want: `502 failed | upstream body is over limits.max_response_bytes (64KiB)`, calls: failed},
	{class: upstream, name: "body over the cap, chunked", js: get("/fault/big-chunked"), want: `502 failed | over limits.max_response_bytes`, calls: failed},
	{class: upstream, name: "body over the cap, no length at all", js: get("/fault/big-close-delimited"), want: `502 failed | over limits.max_response_bytes`, calls: failed},
	{class: upstream, name: "endless chunked body", js: get("/fault/endless-chunked"), want: `502 failed | over limits.max_response_bytes`, calls: failed},
	{class: upstream, name: "Content-Length lies short", js: `const r = await api.get("/fault/lying-short"); return r.status + " " + r.body;`, want: `200 LLLLLLLLLL`, calls: fwd1,
		check: func(t *testing.T, res host.Result, _ *recorder) {
			require.Equal(t, `"200 LLLLLLLLLL"`, string(res.Output))
		}},
	{class: upstream, name: "Content-Length lies long", js: get("/fault/lying-long"), want: `502 failed | upstream gave no usable response: unexpected EOF`, calls: failed},
	{class: upstream, name: "Content-Length claims more than the cap", js: get("/fault/lying-huge"), want: `502 failed | over limits.max_response_bytes`, calls: failed},
	{class: upstream, name: "headers trickled", lim: lim{"call_timeout": "300ms"}, js: get("/fault/trickle"), want: `504 failed | did not answer within limits.call_timeout (300ms)`, calls: failed},
	{class: upstream, name: "no answer", lim: lim{"call_timeout": "300ms"}, js: get("/fault/silent"), want: `504 failed | did not answer within limits.call_timeout (300ms)`, calls: failed},
	{class: upstream, name: "headers over the transport's cap", js: get("/fault/huge-headers"), want: `502 failed | upstream gave no usable response`, calls: failed},
	{class: upstream, name: "reset before the headers", js: get("/fault/reset-before"), want: `502 failed | upstream gave no usable response`, calls: failed},
	{class: upstream, name: "reset mid-body", js: get("/fault/reset-mid-body"), want: `502 failed | upstream gave no usable response`, calls: failed},
	{class: upstream, name: "closed before the headers", js: get("/fault/eof-before"), want: `502 failed | upstream gave no usable response`, calls: failed},
	{class: upstream, name: "not HTTP", js: get("/fault/garbage"), want: `502 failed | upstream gave no usable response: malformed HTTP`, calls: failed},
	{class: upstream, name: "non-JSON body delivered as is", js: get("/fault/html"), want: `200 forwarded <html><body>Gateway says no {not json</body></html>`, calls: fwd1},
	{class: upstream, name: "invalid UTF-8 body delivered losslessly", js: `const r = await api.get("/fault/binary"); return r.status + " " + Array.from(r.bytes()).join(",");`, want: `200 255,254,0,1,192,174,128,34,92,10`, calls: fwd1},
	{class: upstream, name: "gzip bomb is not inflated", js: `const r = await api.get("/fault/gzip-bomb"); const b = r.bytes(); return r.status + " " + r.headers["content-encoding"] + " " + b[0] + "," + b[1] + " " + (b.length < 200000);`, want: `200 gzip 31,139 true`, calls: fwd1},
	{class: upstream, name: "Retry-After -5", js: retryAfterTwice("negative"), want: `503 forwarded [-5] then 503 shed [1]`, calls: broker.Counters{HostCalls: 2, Forwarded: 1, Shed: 1, BreakerOpens: 1}},
	{class: upstream, name: "Retry-After 1.5", js: retryAfterTwice("fraction"), want: `503 forwarded [1.5] then 503 shed [1]`, calls: broker.Counters{HostCalls: 2, Forwarded: 1, Shed: 1, BreakerOpens: 1}},
	{class: upstream, name: "Retry-After 120junk", js: retryAfterTwice("junk"), want: `503 forwarded [120junk] then 503 shed [1]`, calls: broker.Counters{HostCalls: 2, Forwarded: 1, Shed: 1, BreakerOpens: 1}},
	{class: upstream, name: "Retry-After 99999999999", js: retryAfterTwice("huge"), want: `503 forwarded [99999999999] then 503 shed [30]`, calls: broker.Counters{HostCalls: 2, Forwarded: 1, Shed: 1, BreakerOpens: 1}},
	{class: upstream, name: "Retry-After in the past", js: retryAfterTwice("past-date"), want: `503 forwarded [Wed, 21 Oct 2015 07:28:00 GMT] then 503 forwarded [Wed, 21 Oct 2015 07:28:00 GMT]`, calls: broker.Counters{HostCalls: 2, Forwarded: 2}},
	{class: upstream, name: "Retry-After empty", js: retryAfterTwice("empty"), want: `503 forwarded [] then 503 shed [1]`, calls: broker.Counters{HostCalls: 2, Forwarded: 1, Shed: 1, BreakerOpens: 1}},
	{class: upstream, name: "credential echoed in body, headers and a header name", js: `return JSON.stringify(await api.get("/fault/echo"));`, want: `"x-[redacted]":"in the name" | you sent Token [redacted]; again: Token [redacted]`, calls: fwd1},
	{class: upstream, name: "credential echoed in a binary body", js: `const r = await api.get("/fault/echo-binary"); return String.fromCharCode(...r.bytes());`, want: `Token [redacted]`, calls: fwd1},
	{class: upstream, name: "credential echoed in a malformed header line", js: get("/fault/echo-malformed"), want: `502 failed | malformed MIME header: missing colon: "X-Broken Token [redacted]"`, calls: failed},
	{class: upstream, name: "upstream claims Plimsoll-Outcome and hop-by-hop headers", js: `const r = await api.get("/fault/claims-outcome"); return r.outcome + " " + Object.keys(r.headers).sort().join(",") + " " + r.body;`, want: `forwarded content-length,content-type,date upstream body`, calls: fwd1},

	// 6. Guest resources: every run ends at its limit, with the status and a message naming it,
	// and leaves nothing running.
	{class: resources, name: "tight loop before any call", lim: lim{"run_timeout": "400ms"}, js: `while (true) {}`, status: broker.StatusTimeout, err: `run timed out: limits.run_timeout (400ms) passed`, calls: none},
	{class: resources, name: "tight loop after a call", lim: lim{"run_timeout": "400ms"}, js: `await api.get("/pets/1"); for (;;) {}`, status: broker.StatusTimeout, err: `run timed out: limits.run_timeout (400ms) passed`, calls: fwd1},
	{class: resources, name: "Go guest spinning", lim: lim{"run_timeout": "400ms"}, cmd: map[string]any{"op": "loop"}, status: broker.StatusTimeout, err: `run timed out: limits.run_timeout (400ms) passed`, calls: none},
	{class: resources, name: "sleep past the deadline", lim: lim{"run_timeout": "300ms"}, js: `sleep(3600e3); return "woke";`, status: broker.StatusTimeout, err: `limits.run_timeout (300ms) passed`, calls: none},
	{class: resources, name: "backtracking regular expression", lim: lim{"run_timeout": "400ms"}, js: `return /^(a|aa)+(?=b)$/.test("a".repeat(64));`, status: broker.StatusTimeout, err: `limits.run_timeout (400ms) passed`, calls: none},
	{class: resources, name: "memory bomb, buffers", lim: lim{"memory": "48MiB"}, js: `const keep = []; for (;;) keep.push(new ArrayBuffer(1 << 20));`, status: broker.StatusLimit, err: `memory limit limits.memory (48MiB) reached`, calls: none},
	{class: resources, name: "memory bomb, objects", lim: lim{"memory": "24MiB"}, js: `const keep = []; for (let i = 0; ; i++) keep.push({i, s: "item " + i});`, status: broker.StatusLimit, err: `memory limit limits.memory (24MiB) reached`, calls: none},
	{class: resources, name: "memory bomb, string doubling", lim: lim{"memory": "48MiB"}, js: `let s = "x"; for (;;) s = s + s + "y";`, status: broker.StatusLimit, err: `guest limit: string length exceeded (the engine's maximum is 2^30-1 characters)`, calls: none},
	{class: resources, name: "memory bomb, Go guest", lim: lim{"memory": "32MiB"}, cmd: map[string]any{"op": "oom"}, status: broker.StatusLimit, err: `memory limit limits.memory (32MiB) reached`, calls: none},
	{class: resources, name: "unbounded recursion", js: `function f(n) { return f(n + 1) + 1; } return f(0);`, status: broker.StatusLimit, err: `guest limit: call stack depth exceeded (896 KiB of stack)`, calls: none},
	{class: resources, name: "recursion through a getter", js: `const o = {}; Object.defineProperty(o, "x", {get() { return this.x + 1; }}); return o.x;`, status: broker.StatusLimit, err: `guest limit: call stack depth exceeded (896 KiB of stack)`, calls: none},
	{class: resources, name: "output flood, JavaScript", lim: lim{"max_output_bytes": "64KiB"}, js: `return "x".repeat(2 << 20);`, status: broker.StatusLimit, err: `output limit limits.max_output_bytes (64KiB) reached`, calls: none},
	{class: resources, name: "output flood, Go guest", lim: lim{"max_output_bytes": "64KiB"}, cmd: map[string]any{"op": "flood", "fd": 1}, status: broker.StatusLimit, err: `output limit limits.max_output_bytes (64KiB) reached`, calls: none},
	{class: resources, name: "log flood, JavaScript", lim: lim{"max_log_bytes": "16KiB"}, js: `for (;;) console.log("spam spam spam");`, status: broker.StatusLimit, err: `log limit limits.max_log_bytes (16KiB) reached`, calls: none},
	{class: resources, name: "log flood, Go guest", lim: lim{"max_log_bytes": "16KiB"}, cmd: map[string]any{"op": "flood", "fd": 2}, status: broker.StatusLimit, err: `log limit limits.max_log_bytes (16KiB) reached`, calls: none},
	{class: resources, name: "host_call flood, refused calls", lim: lim{"max_host_calls": "20"}, js: `for (;;) await api.get("/admin");`, status: broker.StatusLimit, err: `host call limit limits.max_host_calls (20) reached`, calls: broker.Counters{HostCalls: 20, Denied: 20}},
	{class: resources, name: "host_call flood past the budget", lim: lim{"max_host_calls": "10", "budget": "3"}, js: `for (;;) await api.get("/pets/1");`, status: broker.StatusLimit, err: `host call limit limits.max_host_calls (10) reached`, calls: broker.Counters{HostCalls: 10, Forwarded: 3, OverBudget: 7}},
	{class: resources, name: "host_call flood, Go guest", lim: lim{"max_host_calls": "50"}, cmd: map[string]any{"op": "call", "n": 1000000, "envelope": `{"method":"GET","path":"/admin"}`, "cap": 4096}, status: broker.StatusLimit, err: `host call limit limits.max_host_calls (50) reached`, calls: broker.Counters{HostCalls: 50, Denied: 50}},
	{class: resources, name: "cancel while a call is upstream", lim: lim{"call_timeout": "1h"}, js: `await api.get("/fault/hold"); return "unreachable";`, cancel: true, hold: true, status: broker.StatusError, err: `run canceled by the caller`, calls: failed},
	{class: resources, name: "run deadline while a call is upstream", lim: lim{"call_timeout": "1h", "run_timeout": "400ms"}, js: `await api.get("/fault/hold"); return "unreachable";`, hold: true, status: broker.StatusTimeout, err: `limits.run_timeout (400ms) passed`, calls: failed},
	{class: resources, name: "request pointer past the end of memory", cmd: goRaw(0x7ff00000, 16, -1, 256), want: "-1", calls: invalid, check: traceReason("lies outside guest memory")},
	{class: resources, name: "request ptr+len wraps around 2^32", cmd: goRaw(0xfffffff0, 0x20, -1, 256), want: "-1", calls: invalid, check: traceReason("lies outside guest memory")},
	{class: resources, name: "request length of 2^31", cmd: goRaw(-1, 0x80000000, -1, 256), want: "-1", calls: invalid, check: traceReason("lies outside guest memory")},
	{class: resources, name: "response ptr+cap wraps around 2^32", cmd: goRaw(-1, 27, 0xffffff00, 0x200), want: "-1", calls: invalid, check: traceReason("lies outside guest memory")},
	{class: resources, name: "response capacity past the end of memory", cmd: goRaw(-1, 27, -1, 0x7fffffff), want: "-1", calls: invalid, check: traceReason("lies outside guest memory")},
	{class: resources, name: "host_response with nothing pending", cmd: map[string]any{"op": "raw", "fn": "host_response", "args": []int64{-1, 256}}, want: "-2", calls: none},
	{class: resources, name: "host_response out of bounds", cmd: map[string]any{"op": "raw", "fn": "host_response", "pending": true, "args": []int64{0xfffffff0, 0x100}}, want: "-1", calls: denied},
	{class: resources, name: "host_response into a buffer too small", cmd: map[string]any{"op": "raw", "fn": "host_response", "pending": true, "args": []int64{-1, 4}}, want: "-3", calls: denied},

	// 8. Audit integrity: CR, LF and ANSI escapes cannot forge or corrupt a trace or audit line.
	{class: audit, name: "CR LF and a forged line in the path", js: get("/pets/1\r\n{\"seq\":2,\"outcome\":\"forwarded\"}"), want: `400 invalid | control character`, calls: invalid},
	{class: audit, name: "ANSI escape in the path", js: get("/pets/\x1b[2J\x1b[31mred"), want: `400 invalid | control character`, calls: invalid},
	{class: audit, name: "line separator in the path", js: get("/pets/1\u2028forged"), want: `400 invalid | is not ASCII`, calls: invalid},
	{class: audit, name: "quotes in a forwarded path", js: get(`/pets/1","outcome":"denied`), want: `forwarded`, calls: fwd1,
		check: func(t *testing.T, res host.Result, _ *recorder) {
			require.Equal(t, `/pets/1","outcome":"denied`, res.Trace[0].Path)
		}},
	{class: audit, name: "encoded CR LF in a forwarded path", js: get("/pets/1%0D%0AX-Injected:%20yes"), want: `200 forwarded`, calls: fwd1, sent: "/v1/pets/1%0D%0AX-Injected:%20yes",
		check: func(t *testing.T, _ host.Result, up *recorder) {
			require.Empty(t, up.requests()[0].Header.Get("X-Injected"))
		}},
	{class: audit, name: "CR LF in a query", js: `return show(await api.get("/pets/1", {query: "a=1\r\nX-Injected: yes"}));`, want: `400 invalid | query`, calls: invalid},
	{class: audit, name: "CR LF in a header name", js: getH("/pets/1", `{"X-A\r\n{\"seq\":9}": "1"}`), want: `400 invalid | not a valid HTTP token`, calls: invalid},
	{class: audit, name: "ANSI escape in a header value", js: getH("/pets/1", `{"X-A": "\x1b]0;pwned\x07"}`), want: `400 invalid | control character`, calls: invalid},
	{class: audit, name: "CR LF and ANSI in the method", js: rawJS("{\"method\":\"GET\\r\\n\\u001b[31m\",\"path\":\"/pets/1\"}"), want: `400 invalid`, calls: invalid},
	{class: audit, name: "a thrown error forging an audit line", js: `throw new Error("boom\n{\"run_id\":\"forged\",\"status\":\"ok\"}\n\x1b[31m");`, status: broker.StatusError, err: `tool failed: `, calls: none},
	{class: audit, name: "a tool name with CR LF and ANSI", tool: "evil\r\n{\"status\":\"ok\"}\x1b[31m.js", js: `return 1;`, want: "1", calls: none},
	{class: audit, name: "ANSI escape in an upstream's broken header", js: get("/fault/ansi-malformed"), want: `502 failed | malformed MIME header`, calls: failed},
}

// locationHeld checks that a redirect reached the guest as it came and was not followed.
func locationHeld(t *testing.T, res host.Result, up *recorder) {
	t.Helper()
	require.Len(t, up.requests(), 1)
	require.Contains(t, string(res.Log), `"Location":["`, "the guest sees the redirect's Location")
}

// traceReason checks the reason of the run's one trace entry.
func traceReason(want string) func(*testing.T, host.Result, *recorder) {
	return func(t *testing.T, res host.Result, _ *recorder) {
		t.Helper()
		require.Len(t, res.Trace, 1)
		require.Contains(t, res.Trace[0].Reason, want)
	}
}

func TestSecurity(t *testing.T) {
	rt := newSecRuntime(t, host.Options{})
	perClass := map[string]int{}
	for _, c := range secCases {
		perClass[c.class]++
		t.Run(c.class+"/"+c.name, func(t *testing.T) { runSecCase(t, rt, c) })
	}
	for _, class := range []string{paths, headers, envelope, methods, upstream, resources, audit} {
		require.GreaterOrEqual(t, perClass[class], 3, "class %s needs several cases", class)
	}
	require.GreaterOrEqual(t, len(secCases), 60)
	t.Logf("cases per class: %v (isolation: TestSecurityIsolation)", perClass)
}

func runSecCase(t *testing.T, rt *host.Runtime, c secCase) {
	base := runtime.NumGoroutine()
	up, other := newRecorder(t), newRecorder(t)
	up.other = other.URL()
	p := secProfile(t, up.URL(), c.lim)

	var tool host.Tool
	var input []byte
	switch {
	case c.cmd != nil:
		tool, input = goGuest(), guestCmd(c.cmd)
	default:
		name := c.tool
		if name == "" {
			name = "case.js"
		}
		tool = host.JSTool(name, jsPrelude+c.js)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if c.cancel {
		go func() {
			select {
			case <-up.received:
				cancel()
			case <-ctx.Done():
			}
		}()
	}

	res := rt.Run(ctx, tool, p, input)

	if c.hold {
		// The in-flight request must have been canceled: the upstream's handler ends only then,
		// and closing the server waits for its handlers.
		waitClosed(t, up.canceled)
	}
	up.Close()
	other.Close()

	// The run's status and error.
	wantStatus := c.status
	if wantStatus == "" {
		wantStatus = broker.StatusOK
	}
	require.Equal(t, wantStatus, res.Audit.Status, "error: %v\nlog:\n%s", res.Err, res.Log)
	if c.err == "" {
		require.NoError(t, res.Err, "log:\n%s", res.Log)
	} else {
		require.Error(t, res.Err)
		require.Contains(t, res.Err.Error(), c.err)
		require.Equal(t, res.Err.Error(), res.Audit.Error)
	}

	// What the guest saw.
	if c.want != "" {
		requireWant(t, c.want, guestView(res.Output, c.cmd != nil))
	}

	// The audit line and the trace.
	require.Equal(t, c.calls, res.Audit.Counters)
	require.Equal(t, "sec", res.Audit.Profile)
	require.Equal(t, tool.Name, res.Audit.Tool)
	requireAuditAndTrace(t, res)

	// What reached the upstream: nothing for a refusal; for a forwarded call, exactly what was
	// matched, on base_url's host, with the credential once and nothing the guest may not set.
	reqs := up.requests()
	require.Len(t, reqs, c.calls.Forwarded+c.calls.Failed, "requests that reached the upstream")
	if len(reqs) == 0 {
		require.Zero(t, up.dials.Load(), "connections to the upstream")
		require.Zero(t, up.bytesIn.Load(), "bytes sent to the upstream")
	} else {
		require.LessOrEqual(t, up.dials.Load(), int64(len(reqs)), "one connection at most per request")
	}
	require.Zero(t, other.dials.Load(), "connections to the redirect target")
	upHost := strings.TrimPrefix(up.URL(), "http://")
	for _, r := range reqs {
		require.Equal(t, upHost, r.Host)
		require.Equal(t, []string{secCredValue}, r.Header.Values(secCredHeader))
		for _, name := range []string{"Authorization", "Proxy-Authorization", "Cookie", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host"} {
			require.Empty(t, r.Header.Values(name), name)
		}
	}
	if c.sent != "" {
		require.NotEmpty(t, reqs)
		require.Equal(t, c.sent, reqs[0].RequestURI)
	}

	requireNoCredential(t, res)
	if c.check != nil {
		c.check(t, res, up)
	}
	requireGoroutinesBack(t, base)
}

// waitRequests waits until the upstream has received n requests. The bound only turns a hang
// into a failure.
func waitRequests(t *testing.T, up *recorder, n int) {
	t.Helper()
	for i := 0; i < 60000 && len(up.requests()) < n; i++ {
		time.Sleep(time.Millisecond)
	}
	require.GreaterOrEqual(t, len(up.requests()), n, "requests the upstream received")
}

// waitClosed waits for ch to close. The bound is far above any run deadline in the suite: it
// only turns a hang into a failure.
func waitClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	for i := 0; i < 30000; i++ {
		select {
		case <-ch:
			return
		default:
			time.Sleep(time.Millisecond)
		}
	}
	t.Fatal("the in-flight request was never canceled")
}

// 7. Isolation: runs share nothing, and a run that hogs the CPU does not starve another.
var isolationCases = []struct {
	name string
	run  func(t *testing.T)
}{
	{"GOMAXPROCS tight loops do not starve a well-behaved run", func(t *testing.T) {
		requireNotStarved(t, runtime.GOMAXPROCS(0))
	}},
	{"all slots but one spinning do not starve a well-behaved run", func(t *testing.T) {
		requireNotStarved(t, 2*runtime.GOMAXPROCS(0)-1)
	}},
	{"a queued run ends at its caller's deadline, with its audit line", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{MaxConcurrent: 1})
		base := runtime.NumGoroutine()
		up := newRecorder(t)
		p := secProfile(t, up.URL(), lim{"run_timeout": "1m"})
		hog, stop := context.WithCancel(context.Background())
		done := make(chan host.Result, 1)
		go func() { done <- runJS(hog, rt, p, `await api.get("/pets/1"); for (;;) {}`) }()
		<-up.received // the loop holds the only slot

		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		res := runJS(ctx, rt, p, `return "never started";`)

		require.Equal(t, broker.StatusTimeout, res.Audit.Status)
		require.EqualError(t, res.Err, "run timed out: the caller's deadline passed")
		require.Equal(t, none, res.Audit.Counters)
		require.Empty(t, res.Output)
		requireAuditAndTrace(t, res)
		stop()
		hogRes := <-done
		require.ErrorIs(t, hogRes.Err, host.ErrCancel)
		requireAuditAndTrace(t, hogRes)
		up.Close()
		requireGoroutinesBack(t, base)
	}},
	{"globals are invisible to later and concurrent runs", func(t *testing.T) {
		for _, opts := range []host.Options{{}, {PoolSize: 2}} {
			rt := newSecRuntime(t, opts)
			up := newRecorder(t)
			p := secProfile(t, up.URL(), nil)
			const spoil = `
				globalThis.leak = "run A";
				Object.prototype.polluted = "run A";
				Array.prototype.push = function () { return "hijacked"; };
				api.get = async () => ({status: 299, body: "forged by run A"});
				console.log = () => {};
				Math.random = () => 4;
				return "spoiled";`
			const inspect = `
				const r = await api.get("/pets/1");
				const a = []; a.push(1);
				return [typeof globalThis.leak, ({}).polluted === undefined, a.length, r.status,
					String(Math.random() < 1), typeof console.log].join(" ");`
			for range 2 {
				require.Equal(t, `"spoiled"`, string(runJS(context.Background(), rt, p, spoil).Output))
				res := runJS(context.Background(), rt, p, inspect)
				require.NoError(t, res.Err)
				require.Equal(t, `"undefined true 1 200 true function"`, string(res.Output))
			}
			// Concurrently: each pair races, and no run sees another's changes.
			results := make(chan host.Result, 8)
			for i := range 8 {
				src := inspect
				if i%2 == 0 {
					src = spoil
				}
				go func() { results <- runJS(context.Background(), rt, p, src) }()
			}
			for range 8 {
				res := <-results
				require.NoError(t, res.Err)
				require.Contains(t, []string{`"spoiled"`, `"undefined true 1 200 true function"`}, string(res.Output))
				requireAuditAndTrace(t, res)
			}
			up.Close()
		}
	}},
	{"memory is invisible to the next run", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{})
		up := newRecorder(t)
		defer up.Close()
		p := secProfile(t, up.URL(), nil)
		const reversed = "!nur A nur morf tekram terces-nuR-na" // the marker, backwards
		res := rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "mark", "msg": reversed, "n": 1000, "scan": true}))
		require.NoError(t, res.Err)
		var found int
		_, err := fmt.Sscan(string(res.Output), &found)
		require.NoError(t, err)
		require.GreaterOrEqual(t, found, 1000, "the scanner finds the marker in the run that wrote it")

		res = rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "scan", "msg": reversed}))
		require.NoError(t, res.Err)
		require.Equal(t, "0\n", string(res.Output), "the next run's memory holds none of it")
	}},
	{"a pending response is not carried over", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{})
		up := newRecorder(t)
		defer up.Close()
		p := secProfile(t, up.URL(), nil)
		res := rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "raw", "args": []int64{-1, 27, -1, 0}}))
		require.NoError(t, res.Err)
		require.NotEqual(t, "-1\n", string(res.Output))
		require.Equal(t, denied, res.Audit.Counters, "the call left its answer pending")

		res = rt.Run(context.Background(), goGuest(), p, guestCmd(map[string]any{"op": "raw", "fn": "host_response", "args": []int64{-1, 256}}))
		require.NoError(t, res.Err)
		require.Equal(t, "-2\n", string(res.Output), "ERR_NO_PENDING: the earlier run's answer is gone")
	}},
	{"breakers are per run", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{})
		up := newRecorder(t)
		defer up.Close()
		p := secProfile(t, up.URL(), nil)
		res := runJS(context.Background(), rt, p, retryAfterTwice("huge"))
		require.Equal(t, `"503 forwarded [99999999999] then 503 shed [30]"`, string(res.Output), "run A's breaker is open for 30 s")
		res = runJS(context.Background(), rt, p, get("/pets/1"))
		require.Equal(t, `"200 forwarded ok GET /v1/pets/1"`, string(res.Output), "run B's is closed")
		require.Equal(t, fwd1, res.Audit.Counters)
	}},
	{"budgets are per run", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{})
		up := newRecorder(t)
		defer up.Close()
		p := secProfile(t, up.URL(), lim{"budget": "2"})
		three := `const s = []; for (let i = 0; i < 3; i++) s.push((await api.get("/pets/" + i)).status); return s.join(" ");`
		for range 2 {
			res := runJS(context.Background(), rt, p, three)
			require.Equal(t, `"200 200 429"`, string(res.Output))
			require.Equal(t, broker.Counters{HostCalls: 3, Forwarded: 2, OverBudget: 1}, res.Audit.Counters)
		}
		require.Len(t, up.requests(), 4)
	}},
	{"concurrent runs keep their own trace, counters and run id", func(t *testing.T) {
		rt := newSecRuntime(t, host.Options{})
		up := newRecorder(t)
		defer up.Close()
		p := secProfile(t, up.URL(), nil)
		const n = 6
		results := make(chan host.Result, n)
		for i := range n {
			src := fmt.Sprintf(`for (let k = 0; k <= %d; k++) await api.get("/pets/run%d"); return %d;`, i, i, i)
			go func() { results <- runJS(context.Background(), rt, p, src) }()
		}
		ids := map[string]bool{}
		for range n {
			res := <-results
			require.NoError(t, res.Err)
			var i int
			require.NoError(t, json.Unmarshal(res.Output, &i))
			require.Len(t, res.Trace, i+1)
			for _, e := range res.Trace {
				require.Equal(t, fmt.Sprintf("/pets/run%d", i), e.Path)
			}
			require.Equal(t, broker.Counters{HostCalls: i + 1, Forwarded: i + 1}, res.Audit.Counters)
			requireAuditAndTrace(t, res)
			ids[res.Audit.RunID] = true
		}
		require.Len(t, ids, n)
	}},
}

func TestSecurityIsolation(t *testing.T) {
	for _, c := range isolationCases {
		t.Run(c.name, c.run)
	}
}

// runJS runs a JavaScript tool with the suite's prelude.
func runJS(ctx context.Context, rt *host.Runtime, p *profiles.Profile, src string) host.Result {
	return rt.Run(ctx, host.JSTool("case.js", jsPrelude+src), p, nil)
}

// requireNotStarved starts n runs that spin forever, then checks that a well-behaved run still
// finishes within its own deadline, with status ok. host.Options.MaxConcurrent (2×GOMAXPROCS by
// default) bounds the runs executing at once; a spinning guest is stopped at its deadline by
// wazero's close-on-context-done checks, and between them the Go scheduler preempts it like any
// goroutine.
func requireNotStarved(t *testing.T, n int) {
	rt := newSecRuntime(t, host.Options{})
	base := runtime.NumGoroutine()
	up := newRecorder(t)
	hogs := secProfile(t, up.URL(), lim{"run_timeout": "1m"})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan host.Result, n)
	for range n {
		go func() { done <- runJS(ctx, rt, hogs, `await api.get("/pets/hog"); for (;;) {}`) }()
	}
	waitRequests(t, up, n) // every spinning run has started

	good := secProfile(t, up.URL(), lim{"run_timeout": "10s"}) // the spinning runs have a minute
	res := runJS(context.Background(), rt, good, `
		let sum = 0;
		for (let i = 0; i < 20000; i++) sum += i;
		const r = await api.get("/pets/good");
		return r.status + " " + sum;`)

	require.NoError(t, res.Err, "the well-behaved run finishes within its deadline")
	require.Equal(t, broker.StatusOK, res.Audit.Status)
	require.Equal(t, `"200 199990000"`, string(res.Output))
	require.Equal(t, fwd1, res.Audit.Counters)
	stop()
	for range n {
		hog := <-done
		require.ErrorIs(t, hog.Err, host.ErrCancel)
		require.Equal(t, fwd1, hog.Audit.Counters)
		requireAuditAndTrace(t, hog)
	}
	up.Close()
	requireGoroutinesBack(t, base)
}

// TestSecurityPathFolding checks the broker's list of encoded characters that fold into a
// delimiter against Unicode's own NFKC tables, and that every overlong or surrogate encoding is
// refused. It calls broker.CheckPath directly: the end-to-end cases above show the same rule at
// work in a run.
func TestSecurityPathFolding(t *testing.T) {
	encode := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
		return b.String()
	}
	refused := 0
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		if norm.NFKC.IsNormalString(s) && r%101 != 0 {
			continue // NFKC leaves it alone, so it cannot fold into anything; check a sample
		}
		folds := strings.ContainsAny(norm.NFKC.String(s), `./\%`)
		err := broker.CheckPath("/pets/" + encode(s))
		if folds {
			require.Error(t, err, "U+%04X folds to %q", r, norm.NFKC.String(s))
			refused++
		} else {
			require.NoError(t, err, "U+%04X", r)
		}
	}
	require.Equal(t, 40, refused)

	// Overlong encodings of any ASCII byte, and encoded UTF-16 surrogates.
	for c := 0; c < 0x80; c++ {
		for _, seq := range [][]byte{
			{0xC0 | byte(c>>6), 0x80 | byte(c&0x3f)},
			{0xE0, 0x80 | byte(c>>6), 0x80 | byte(c&0x3f)},
			{0xF0, 0x80, 0x80 | byte(c>>6), 0x80 | byte(c&0x3f)},
		} {
			require.Error(t, broker.CheckPath("/pets/"+encode(string(seq))), "%X", seq)
		}
	}
	for hi := 0xA0; hi <= 0xBF; hi++ {
		require.Error(t, broker.CheckPath("/pets/"+encode(string([]byte{0xED, byte(hi), 0x80}))))
	}
}

// TestSecurityCredentialInAHeaderNameAnyCase: the transport canonicalises header names, so a
// credential echoed in a name comes back in another case. It is redacted all the same.
func TestSecurityCredentialInAHeaderNameAnyCase(t *testing.T) {
	const mixed = "sk-Live-Mixed7Q"
	rt, err := host.New(context.Background(), host.Options{CacheDir: secCacheDir(), Getenv: func(string) string { return mixed }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(context.Background())) })
	up := newRecorder(t)
	defer up.Close()
	p := secProfile(t, up.URL(), nil)

	res := runJS(context.Background(), rt, p, `return JSON.stringify(await api.get("/fault/echo"));`)

	require.NoError(t, res.Err)
	require.Equal(t, []string{"Token " + mixed}, up.requests()[0].Header.Values(secCredHeader))
	trace, err := json.Marshal(res.Trace)
	require.NoError(t, err)
	for where, text := range map[string]string{"output": string(res.Output), "log": string(res.Log), "trace": string(trace)} {
		require.NotContains(t, strings.ToLower(text), strings.ToLower(mixed), where)
	}
	require.Contains(t, string(res.Output), `x-[redacted]`)
}
