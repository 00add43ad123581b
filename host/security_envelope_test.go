package host_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/host"
)

// Envelope: decoded strictly; anything ambiguous is refused before the grant is consulted.
var envelopeCases = []secCase{
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
}

func TestSecurityEnvelope(t *testing.T) { runSecCases(t, envelopeCases) }
