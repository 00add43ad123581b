package profiles

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/plimsoll/plimsoll/abi"
)

// DefaultRequestHeaders are the request headers every tool may send. Each one describes what the
// tool wants (a media type, a language, a condition on a cached copy, an idempotency key) and
// none changes the method, the target, the credential, the framing or the encoding of the
// response; RATIONALE.md says why each is in and what was left out. A profile adds names with
// request_headers. Canonical form.
var DefaultRequestHeaders = []string{
	"Accept", "Accept-Language", "Cache-Control", "Content-Language", "Content-Type",
	"Idempotency-Key", "If-Match", "If-Modified-Since", "If-None-Match", "If-Unmodified-Since",
	"User-Agent", "X-Request-Id",
}

// maxRequestHeaders caps a profile's request_headers, as the broker caps a request's headers.
const maxRequestHeaders = 64

// reserved are the request headers that neither a tool nor a profile may set, by canonical name,
// with the reason. The broker owns credentials, routing and framing; it decides how a response is
// encoded and that it arrives whole; and the grant, not a header, says which method and path the
// upstream acts on.
var reserved = func() map[string]string {
	m := map[string]string{}
	add := func(why string, names ...string) {
		for _, n := range names {
			m[n] = why
		}
	}
	add("the broker owns it", "Authorization", "Proxy-Authorization", "Cookie", "Host", "Forwarded",
		"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length",
		"Expect", "X-Real-Ip", abi.OutcomeHeader)
	add("the broker decides how response bodies are encoded and that they arrive whole",
		"Accept-Encoding", "Range", "If-Range", "Want-Digest", "Want-Content-Digest", "Want-Repr-Digest")
	add("it overrides the method or path the grant matched", "X-Http-Method-Override", "X-Http-Method",
		"X-Method-Override", "X-Original-Method", "X-Original-Url", "X-Rewrite-Url", "X-Override-Url")
	return m
}()

// reservedPrefixes are reserved name prefixes: proxies' and forwarding headers.
var reservedPrefixes = []string{"Proxy-", "X-Forwarded-"}

// CanonicalUnderscored is the name a CGI-style server reads name as: it maps '-' and '_' alike to
// '_', so X_Api_Key reaches the application as X-Api-Key would. Canonical form.
func CanonicalUnderscored(name string) string {
	return http.CanonicalHeaderKey(strings.ReplaceAll(name, "_", "-"))
}

// ReservedHeader reports whether name (any case, '_' or '-') is a request header that neither a
// tool nor a profile may set, and why; credentialHeader is the profile's, which is reserved too.
func ReservedHeader(name, credentialHeader string) (why string, ok bool) {
	folded := CanonicalUnderscored(name)
	switch {
	case credentialHeader != "" && folded == CanonicalUnderscored(credentialHeader):
		why, ok = "the broker owns it", true
	case reserved[folded] != "":
		why, ok = reserved[folded], true
	default:
		for _, p := range reservedPrefixes {
			if strings.HasPrefix(folded, p) {
				why, ok = "the broker owns it", true
			}
		}
	}
	if ok && strings.Contains(name, "_") {
		why = fmt.Sprintf("spelled with '_' it is %s to CGI-style servers, and %s", folded, why)
	}
	return why, ok
}

// IsToken reports whether s is an HTTP token (RFC 9110 tchar+): what a header name must be.
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// requestHeaders reads request_headers: a list of header names a tool may send beyond
// DefaultRequestHeaders. Each must be a token, not reserved, and given once ('_' and '-' being
// the same name to CGI-style servers).
func (d *decoder) requestHeaders(v any, credentialHeader string) []string {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		d.fail("request_headers", "must be a list of header names")
		return nil
	}
	if len(list) > maxRequestHeaders {
		d.fail("request_headers", "has %d names, over the cap of %d", len(list), maxRequestHeaders)
		return nil
	}
	seen := map[string]int{}
	names := make([]string, 0, len(list))
	for i, item := range list {
		field := fmt.Sprintf("request_headers[%d]", i)
		s, ok := item.(string)
		switch {
		case !ok:
			d.fail(field, "must be a header name (a string)")
		case !IsToken(s):
			d.fail(field, "%q is not a valid HTTP header name", s)
		default:
			folded := CanonicalUnderscored(s)
			if why, bad := ReservedHeader(s, credentialHeader); bad {
				d.fail(field, "%s may not be granted to a tool: %s", s, why)
			} else if j, dup := seen[folded]; dup {
				d.fail(field, "%s is given twice (also request_headers[%d]; names are case-insensitive, and '_' is '-' to CGI-style servers)", s, j)
			}
			seen[folded] = i
			names = append(names, http.CanonicalHeaderKey(s))
		}
	}
	return names
}
