package host_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/host"
)

// Headers: the broker owns credentials, routing and framing; a guest that sets one is
// refused, never overwritten.
var headerCases = []secCase{
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
	{class: headers, name: "64 headers pass", lim: lim{"request_headers": xH64()}, js: `const h = {}; for (let i = 0; i < 64; i++) h["X-H" + i] = "v"; return show(await api.get("/pets/1", {headers: h}));`, want: `200 forwarded`, calls: fwd1,
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

	// Issue 9, class 4: request headers are an allow-list. Names that make a framework act on
	// another method or path, and underscore spellings that CGI-style servers read as a refused
	// name, are refused; so is every name neither the defaults nor the profile allow.
	{class: headers, name: "X-HTTP-Method-Override", js: getH("/pets/1", `{"X-HTTP-Method-Override": "DELETE"}`), want: `400 invalid | header X-Http-Method-Override may not be set by a tool: it overrides the method or path the grant matched`, calls: invalid},
	{class: headers, name: "X-HTTP-Method", js: getH("/pets/1", `{"X-HTTP-Method": "DELETE"}`), want: `400 invalid | header X-Http-Method may not be set`, calls: invalid},
	{class: headers, name: "X-Method-Override", js: getH("/pets/1", `{"X-Method-Override": "PUT"}`), want: `400 invalid | header X-Method-Override may not be set`, calls: invalid},
	{class: headers, name: "X-Original-Method", js: getH("/pets/1", `{"X-Original-Method": "DELETE"}`), want: `400 invalid | header X-Original-Method may not be set`, calls: invalid},
	{class: headers, name: "X-Original-URL", js: getH("/pets/1", `{"X-Original-URL": "/admin"}`), want: `400 invalid | header X-Original-Url may not be set`, calls: invalid},
	{class: headers, name: "X-Rewrite-URL", js: getH("/pets/1", `{"X-Rewrite-URL": "/admin"}`), want: `400 invalid | header X-Rewrite-Url may not be set`, calls: invalid},
	{class: headers, name: "X_HTTP_Method_Override, underscores", js: getH("/pets/1", `{"X_HTTP_Method_Override": "DELETE"}`), want: `400 invalid | spelled with '_' it is X-Http-Method-Override to CGI-style servers, and it overrides the method`, calls: invalid},
	{class: headers, name: "X_Forwarded_For", js: getH("/pets/1", `{"X_Forwarded_For": "127.0.0.1"}`), want: `400 invalid | spelled with '_' it is X-Forwarded-For`, calls: invalid},
	{class: headers, name: "Proxy_Authorization", js: getH("/pets/1", `{"Proxy_Authorization": "Basic eA=="}`), want: `400 invalid | spelled with '_' it is Proxy-Authorization`, calls: invalid},
	{class: headers, name: "the credential header as X_Api_Key", js: getH("/pets/1", `{"X_Api_Key": "Token guess"}`), want: `400 invalid | spelled with '_' it is X-Api-Key to CGI-style servers, and the broker owns it`, calls: invalid},
	{class: headers, name: "the credential header as x_api-KEY, mixed", js: getH("/pets/1", `{"x_api-KEY": "Token guess"}`), want: `400 invalid | it is X-Api-Key`, calls: invalid},
	{class: headers, name: "Authorization with an underscore is still refused", js: getH("/pets/1", `{"Authorization_": "x"}`), want: `400 invalid | header Authorization_ is not one a tool may send`, calls: invalid},
	{class: headers, name: "an unlisted name", js: getH("/pets/1", `{"X-Custom": "1"}`), want: `400 invalid | header X-Custom is not one a tool may send: allowed are Accept, Accept-Language`, calls: invalid},
	{class: headers, name: "X-Client-IP is not allowed", js: getH("/pets/1", `{"X-Client-IP": "127.0.0.1"}`), want: `400 invalid | header X-Client-Ip is not one a tool may send`, calls: invalid},
	{class: headers, name: "True-Client-IP is not allowed", js: getH("/pets/1", `{"True-Client-IP": "127.0.0.1"}`), want: `400 invalid | header True-Client-Ip is not one a tool may send`, calls: invalid},
	{class: headers, name: "an allowed name spelled with '_' is another name", js: getH("/pets/1", `{"Accept_Language": "en"}`), want: `400 invalid | header Accept_language is not one a tool may send`, calls: invalid},
	{class: headers, name: "one bad name among good ones refuses the call", js: getH("/pets/1", `{Accept: "a/b", "X-Evil": "1", "User-Agent": "t"}`), want: `400 invalid | header X-Evil is not one a tool may send`, calls: invalid},
	{class: headers, name: "a name the profile grants", lim: lim{"request_headers": "[X-Custom]"}, js: getH("/pets/1", `{"x-custom": "1"}`), want: `200 forwarded`, calls: fwd1,
		check: func(t *testing.T, _ host.Result, up *recorder) {
			require.Equal(t, "1", up.requests()[0].Header.Get("X-Custom"))
		}},
	{class: headers, name: "a granted name spelled with '_' is refused", lim: lim{"request_headers": "[X-Custom]"}, js: getH("/pets/1", `{"X_Custom": "1"}`), want: `400 invalid | header X_custom is not one a tool may send`, calls: invalid},
	{class: headers, name: "the default set passes", js: getH("/pets/1", `{Accept: "application/json", "Accept-Language": "en", "Content-Type": "text/plain", "User-Agent": "tool/1", "If-None-Match": "\"e\"", "If-Modified-Since": "Wed, 21 Oct 2015 07:28:00 GMT", "Idempotency-Key": "k1", "Cache-Control": "no-cache"}`), want: `200 forwarded`, calls: fwd1,
		check: func(t *testing.T, _ host.Result, up *recorder) {
			h := up.requests()[0].Header
			for _, name := range []string{"Accept", "Accept-Language", "Content-Type", "User-Agent", "If-None-Match", "If-Modified-Since", "Idempotency-Key", "Cache-Control"} {
				require.NotEmpty(t, h.Get(name), name)
			}
		}},
	{class: headers, name: "nothing but the allowed names reaches the upstream", js: getH("/pets/1", `{Accept: "a/b"}`), want: `200 forwarded`, calls: fwd1,
		check: func(t *testing.T, _ host.Result, up *recorder) {
			for name := range up.requests()[0].Header {
				require.Contains(t, []string{"Accept", "Accept-Encoding", "User-Agent", secCredHeader}, name)
			}
		}},
}

func TestSecurityHeaders(t *testing.T) { runSecCases(t, headerCases) }

// xH64 grants the 64 headers X-H0 … X-H63.
func xH64() string {
	names := make([]string, 64)
	for i := range names {
		names[i] = fmt.Sprintf("X-H%d", i)
	}
	return "[" + strings.Join(names, ", ") + "]"
}
