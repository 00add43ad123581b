package profiles_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/plimsoll/plimsoll/profiles"
)

func TestRequestHeadersLoad(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "p.yaml", profileYAML(map[string]string{"request_headers": "request_headers: [x-custom, X_Trace, Prefer]"}))
	p, err := LoadFile(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"X-Custom", "X_trace", "Prefer"}, p.RequestHeaders)

	p, err = LoadFile(write(t, dir, "none.yaml", profileYAML(nil)))
	require.NoError(t, err)
	assert.Nil(t, p.RequestHeaders, "the field is optional: generated profiles load unchanged")
}

// Each refusal names the file, the field and the reason, and refuses the whole profile.
func TestRequestHeadersRefusals(t *testing.T) {
	for _, c := range []struct{ name, list, field, reason string }{
		{"not a list", `request_headers: X-A`, "request_headers", "must be a list of header names"},
		{"not a string", `request_headers: [1]`, "request_headers[0]", "must be a header name (a string)"},
		{"not a token", `request_headers: ["X A"]`, "request_headers[0]", `"X A" is not a valid HTTP header name`},
		{"a colon", `request_headers: ["X-A:"]`, "request_headers[0]", `"X-A:" is not a valid HTTP header name`},
		{"empty", `request_headers: [""]`, "request_headers[0]", `"" is not a valid HTTP header name`},
		{"Authorization", `request_headers: [Authorization]`, "request_headers[0]", "Authorization may not be granted to a tool: the broker owns it"},
		{"Proxy-Authorization with underscores", `request_headers: [X-A, proxy_authorization]`, "request_headers[1]", "proxy_authorization may not be granted to a tool: spelled with '_' it is Proxy-Authorization to CGI-style servers, and the broker owns it"},
		{"Cookie", `request_headers: [cookie]`, "request_headers[0]", "cookie may not be granted to a tool: the broker owns it"},
		{"Host", `request_headers: [Host]`, "request_headers[0]", "Host may not be granted to a tool: the broker owns it"},
		{"hop-by-hop", `request_headers: [X-A, Connection]`, "request_headers[1]", "Connection may not be granted to a tool: the broker owns it"},
		{"a proxy header", `request_headers: [Proxy-Foo]`, "request_headers[0]", "Proxy-Foo may not be granted to a tool: the broker owns it"},
		{"X-Forwarded-Host with underscores", `request_headers: [X_Forwarded_Host]`, "request_headers[0]", "X_Forwarded_Host may not be granted to a tool: spelled with '_' it is X-Forwarded-Host to CGI-style servers, and the broker owns it"},
		{"Accept-Encoding", `request_headers: [Accept-Encoding]`, "request_headers[0]", "Accept-Encoding may not be granted to a tool: the broker decides how response bodies are encoded and that they arrive whole"},
		{"Range", `request_headers: [range]`, "request_headers[0]", "range may not be granted to a tool: the broker decides how response bodies are encoded and that they arrive whole"},
		{"a method override", `request_headers: [X-HTTP-Method-Override]`, "request_headers[0]", "X-HTTP-Method-Override may not be granted to a tool: it overrides the method or path the grant matched"},
		{"duplicate", `request_headers: [X-A, x-a]`, "request_headers[1]", "x-a is given twice (also request_headers[0]; names are case-insensitive, and '_' is '-' to CGI-style servers)"},
		{"duplicate through '_'", `request_headers: [X-Trace-Id, X_Trace_Id]`, "request_headers[1]", "X_Trace_Id is given twice (also request_headers[0]; names are case-insensitive, and '_' is '-' to CGI-style servers)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := write(t, t.TempDir(), "p.yaml", profileYAML(map[string]string{"request_headers": c.list}))
			p, err := LoadFile(path)
			assert.Nil(t, p, "all or nothing")
			var pe *Error
			require.True(t, errors.As(err, &pe), "%v", err)
			assert.Equal(t, path, pe.File)
			assert.Equal(t, c.field, pe.Field)
			assert.Equal(t, c.reason, pe.Reason)
		})
	}
}

func TestRequestHeadersRefuseTheCredentialHeader(t *testing.T) {
	yaml := profileYAML(map[string]string{"credential": "credential:\n  header: X-Api-Key\n  env: TOKEN",
		"request_headers": "request_headers: [X_API_KEY]"})
	_, err := LoadFile(write(t, t.TempDir(), "p.yaml", yaml))
	var pe *Error
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, "request_headers[0]", pe.Field)
	assert.Contains(t, pe.Reason, "it is X-Api-Key to CGI-style servers, and the broker owns it")
}

func TestDefaultRequestHeadersAreCanonicalAndNotReserved(t *testing.T) {
	assert.True(t, slices.IsSorted(DefaultRequestHeaders))
	for _, n := range DefaultRequestHeaders {
		_, reserved := ReservedHeader(n, "Authorization")
		assert.False(t, reserved, n)
		assert.True(t, IsToken(n), n)
	}
}
