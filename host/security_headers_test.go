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
