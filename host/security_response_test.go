package host_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
)

// Responses (issue 9, class 1): only a final answer is an answer, and every read of one ends by
// the call deadline and the run deadline, whatever the upstream sends: a 101 that turns the
// connection into the body, a flood of 1xx, a body that drips forever. Trailers never reach the
// guest.
var responseCases = []secCase{
	{class: responses, name: "101 Switching Protocols holding the connection", js: get("/fault/switching-protocols"), want: `502 failed | upstream answered 101 Switching Protocols, not a final response`, calls: failed,
		check: upstreamStatus(101)},
	{class: responses, name: "101 Switching Protocols, run deadline shorter than the call's", lim: lim{"call_timeout": "1h", "run_timeout": "1m"}, js: get("/fault/switching-protocols"), want: `502 failed | 101 Switching Protocols, not a final response`, calls: failed},
	{class: responses, name: "101 without Upgrade headers", js: get("/fault/switching-protocols-bare"), want: `502 failed | upstream answered 101 Switching Protocols`, calls: failed},
	{class: responses, name: "100 Continue before the answer is skipped", js: get("/fault/continue-then-ok"), want: `200 forwarded ok`, calls: fwd1},
	{class: responses, name: "a flood of 103 Early Hints", js: get("/fault/early-hints-flood"), want: `502 failed | upstream gave no usable response`, calls: failed},
	{class: responses, name: "an informational answer's headers never reach the guest", js: `const r = await api.get("/fault/early-hints-echo"); return r.status + " " + r.body + " " + JSON.stringify(r.headers);`, want: `200 fine`, calls: fwd1,
		check: func(t *testing.T, res host.Result, _ *recorder) {
			require.NotContains(t, string(res.Output), "x-echo")
		}},
	{class: responses, name: "body dripping past the call deadline", lim: lim{"call_timeout": "300ms"}, js: get("/fault/drip-body"), want: `504 failed | did not answer within limits.call_timeout (300ms)`, calls: failed},
	{class: responses, name: "chunked body dripping past the call deadline", lim: lim{"call_timeout": "300ms"}, js: get("/fault/drip-chunked"), want: `504 failed | did not answer within limits.call_timeout (300ms)`, calls: failed},
	{class: responses, name: "body dripping past the run deadline", lim: lim{"call_timeout": "1h", "run_timeout": "400ms"}, js: `await api.get("/fault/drip-body"); return "unreachable";`, status: broker.StatusTimeout, err: `limits.run_timeout (400ms) passed`, calls: failed},
	{class: responses, name: "101 through the Go guest", cmd: goCall(`{"method":"GET","path":"/fault/switching-protocols"}`), want: `502 failed upstream answered 101 Switching Protocols`, calls: failed},
	{class: responses, name: "a trailer carrying the credential is dropped", js: `const r = await api.get("/fault/trailer-echo"); return r.status + " " + r.body + " " + Object.keys(r.headers).sort().join(",");`, want: `200 body content-type,date`, calls: fwd1},
}

func TestSecurityResponses(t *testing.T) { runSecCases(t, responseCases) }

// upstreamStatus checks the status the upstream gave, as the trace records it.
func upstreamStatus(want int) func(*testing.T, host.Result, *recorder) {
	return func(t *testing.T, res host.Result, _ *recorder) {
		t.Helper()
		require.Len(t, res.Trace, 1)
		require.Equal(t, want, res.Trace[0].UpstreamStatus)
	}
}
