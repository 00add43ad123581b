package host_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
)

// Audit integrity: CR, LF and ANSI escapes cannot forge or corrupt a trace or audit line.
var auditCases = []secCase{
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

func TestSecurityAudit(t *testing.T) { runSecCases(t, auditCases) }
