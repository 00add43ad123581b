package host_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/host"
)

// Encoding (issue 9, class 3): the broker, not the tool, decides how a response body is encoded
// and that it arrives whole. A tool may not ask for compression or a slice; every upstream
// request says Accept-Encoding: identity; a body in an encoding the broker did not ask for is
// refused, never inflated or passed on past redaction.
var encodingCases = []secCase{
	{class: encoding, name: "Accept-Encoding", js: getH("/fault/echo", `{"Accept-Encoding": "gzip"}`), want: `400 invalid | header Accept-Encoding may not be set by a tool: the broker decides how response bodies are encoded`, calls: invalid},
	{class: encoding, name: "accept-encoding, lower case", js: getH("/fault/echo", `{"accept-encoding": "br"}`), want: `400 invalid | header Accept-Encoding may not be set`, calls: invalid},
	{class: encoding, name: "Accept_Encoding, underscore", js: getH("/fault/echo", `{"Accept_Encoding": "gzip"}`), want: `400 invalid | spelled with '_' it is Accept-Encoding`, calls: invalid},
	{class: encoding, name: "Range", js: getH("/fault/echo", `{Range: "bytes=0-7"}`), want: `400 invalid | header Range may not be set by a tool: the broker decides how response bodies are encoded and that they arrive whole`, calls: invalid},
	{class: encoding, name: "If-Range", js: getH("/fault/echo", `{"If-Range": "\"etag\""}`), want: `400 invalid | header If-Range may not be set`, calls: invalid},
	{class: encoding, name: "Range as an array of values", js: getH("/fault/echo", `{range: ["bytes=0-7", "bytes=8-15"]}`), want: `400 invalid | header Range may not be set`, calls: invalid},
	{class: encoding, name: "Want-Digest", js: getH("/fault/echo", `{"Want-Digest": "sha-256"}`), want: `400 invalid | header Want-Digest may not be set`, calls: invalid},
	{class: encoding, name: "TE: gzip", js: getH("/fault/echo", `{TE: "gzip"}`), want: `400 invalid | header Te may not be set`, calls: invalid},
	{class: encoding, name: "every upstream request asks for identity", js: get("/pets/1"), want: `200 forwarded`, calls: fwd1,
		check: func(t *testing.T, _ host.Result, up *recorder) {
			require.Equal(t, []string{"identity"}, up.requests()[0].Header.Values("Accept-Encoding"))
		}},
	{class: encoding, name: "gzip the broker did not ask for, echoing the credential", js: get("/fault/gzip-anyway"), want: `502 failed | upstream sent Content-Encoding "gzip", which the broker did not ask for`, calls: failed},
	{class: encoding, name: "br the broker did not ask for", js: get("/fault/br-anyway"), want: `502 failed | Content-Encoding "br"`, calls: failed},
	{class: encoding, name: "Content-Encoding: identity is plain", js: get("/fault/identity-declared"), want: `200 forwarded plain`, calls: fwd1},
	{class: encoding, name: "an encoding on an empty body holds nothing to redact", js: `const r = await api.get("/fault/gzip-empty"); return r.status + " " + r.outcome;`, want: `204 forwarded`, calls: fwd1},
	{class: encoding, name: "a 206 the tool did not ask for is passed on as it came", js: `const r = await api.get("/fault/partial-unasked"); return r.status + " " + r.body + " " + r.headers["content-range"];`, want: `206 part bytes 0-3/10`, calls: fwd1},
}

func TestSecurityEncoding(t *testing.T) { runSecCases(t, encodingCases) }
