package host_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
)

// Upstream faults: the upstream is semi-trusted. Redirects are not followed, bodies are
// capped whatever the framing says, and every failure is a 502/504 the guest can read.
var upstreamCases = []secCase{
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
	// Issue 9, class 3: a body the broker did not ask to be encoded is refused, never inflated.
	{class: upstream, name: "gzip bomb is not inflated", js: get("/fault/gzip-bomb"), want: `502 failed | upstream sent Content-Encoding "gzip", which the broker did not ask for`, calls: failed},
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
}

func TestSecurityUpstream(t *testing.T) { runSecCases(t, upstreamCases) }

// locationHeld checks that a redirect reached the guest as it came and was not followed.
func locationHeld(t *testing.T, res host.Result, up *recorder) {
	t.Helper()
	require.Len(t, up.requests(), 1)
	require.Contains(t, string(res.Log), `"Location":["`, "the guest sees the redirect's Location")
}
