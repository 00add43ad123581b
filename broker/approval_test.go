package broker_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// approverFunc is a scripted person.
type approverFunc func(ctx context.Context, q broker.ApprovalRequest) broker.ApprovalAnswer

func (f approverFunc) Approve(ctx context.Context, q broker.ApprovalRequest) broker.ApprovalAnswer {
	return f(ctx, q)
}

func answerWith(decision string) approverFunc {
	return func(context.Context, broker.ApprovalRequest) broker.ApprovalAnswer {
		return broker.ApprovalAnswer{Decision: decision, Channel: "admin", By: "ops@example", Reason: "not today"}
	}
}

// neverAnswers waits until the broker stops waiting.
var neverAnswers = approverFunc(func(ctx context.Context, _ broker.ApprovalRequest) broker.ApprovalAnswer {
	<-ctx.Done()
	return broker.ApprovalAnswer{Channel: "admin"}
})

const gatedProfile = `routes: [GET /pets, POST /payments, DELETE /pets/*]
health_check: GET /status
budget: {calls: 3}
approvals:
  routes: [POST /payments, DELETE /pets/*]
  timeout: 30s
  max_per_run: 2
`

func gatedRun(t testing.TB, rt http.RoundTripper, a broker.Approver, extra ...string) *broker.Broker {
	t.Helper()
	body := gatedProfile
	for _, e := range extra {
		body += e
	}
	p := writeProfile(t, "http://api.test", body)
	r, err := broker.New(broker.Config{Profile: p, Secret: profiles.NewSecret(secret), Transport: rt,
		RunID: "run-ap", Tool: "pay.js", Approver: a})
	require.NoError(t, err)
	return r
}

// payHeaders are what pay sends besides the body: a header can change what a body means.
var payHeaders = http.Header{"Content-Type": {"application/json"}, "If-Match": {`"v7"`, `"v8"`}}

func pay(r *broker.Broker, body string) broker.Response {
	return r.Call(context.Background(), broker.Request{Method: "POST", Path: "/payments", Query: "dry=0", Headers: payHeaders, Body: []byte(body)})
}

func TestApprovalGrantedForwardsWhatWasShown(t *testing.T) {
	up := &script{answer: func(*http.Request) (*http.Response, error) { return inMemReply(201, `{"id":"p1"}`), nil }}
	var shown broker.ApprovalRequest
	r := gatedRun(t, up, approverFunc(func(_ context.Context, q broker.ApprovalRequest) broker.ApprovalAnswer {
		shown = q
		return broker.ApprovalAnswer{Decision: broker.ApprovalGranted, Channel: "admin", By: "ops"}
	}))
	resp := pay(r, `{ "to": "acme",  "cents": 1200 }`)
	assert.Equal(t, 201, resp.Status)
	require.Len(t, up.requests(), 1)

	assert.Equal(t, "POST", shown.Method)
	assert.Equal(t, "/payments", shown.Path)
	assert.Equal(t, "dry=0", shown.Query)
	assert.Equal(t, "POST /payments", shown.Route)
	assert.Equal(t, `{"cents":1200,"to":"acme"}`, shown.Summary, "canonical: sorted keys, no spaces")
	assert.Equal(t, []string{"Content-Type: application/json", `If-Match: "v7"`, `If-Match: "v8"`}, shown.Headers)
	assert.Equal(t, broker.CallHash("POST", "/payments", "dry=0", payHeaders, []byte(`{ "to": "acme",  "cents": 1200 }`)), shown.Hash)
	sent := up.requests()[0].Header.Clone()
	sent.Del("Accept-Encoding") // the broker's own two, not the tool's
	sent.Del("X-Api-Key")
	assert.Equal(t, payHeaders, sent, "the headers shown are the tool's headers that left")
	assert.Equal(t, []string{"elicit", "admin"}, shown.Channels)
	assert.Equal(t, "run-ap", shown.RunID)
	assert.Equal(t, "pay.js", shown.Tool)

	e := r.Trace()[0]
	assert.Equal(t, broker.Forwarded, e.Outcome)
	require.NotNil(t, e.Approval)
	assert.Equal(t, broker.ApprovalTrace{ID: shown.ID, Channel: "admin", Decision: "granted", By: "ops", Hash: shown.Hash, WaitMs: e.Approval.WaitMs}, *e.Approval)
	a := r.Finish(broker.StatusOK, nil)
	assert.Equal(t, &broker.ApprovalCounts{Requested: 1, Granted: 1, WaitMs: a.Approvals.WaitMs}, a.Approvals)
	assert.Equal(t, 1, a.Forwarded)
}

func TestApprovalRefusalsNeverLeave(t *testing.T) {
	for _, tc := range []struct {
		name     string
		approver broker.Approver
		decision string
		error    string
		counts   broker.ApprovalCounts
	}{
		{"declined", answerWith(broker.ApprovalDeclined), "declined", "approval_declined", broker.ApprovalCounts{Requested: 1, Declined: 1}},
		{"canceled", answerWith(broker.ApprovalCanceled), "canceled", "approval_declined", broker.ApprovalCounts{Requested: 1, Declined: 1}},
		{"unavailable", answerWith(broker.ApprovalUnavailable), "unavailable", "approval_unavailable", broker.ApprovalCounts{Requested: 1, Unavailable: 1}},
		{"no approver", nil, "unavailable", "approval_unavailable", broker.ApprovalCounts{Requested: 1, Unavailable: 1}},
		{"empty answer", answerWith(""), "unavailable", "approval_unavailable", broker.ApprovalCounts{Requested: 1, Unavailable: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := &script{answer: func(*http.Request) (*http.Response, error) { return inMemReply(200, ""), nil }}
			r := gatedRun(t, up, tc.approver)
			raw := r.CallEnvelope(context.Background(), envelope(t, map[string]any{"method": "DELETE", "path": "/pets/7"}))
			g := decodeEnvelope(t, raw)
			assert.Equal(t, 403, g.Status)
			assert.Equal(t, ownBody{Error: tc.error, Reason: "the call to DELETE /pets/* needs a person's approval and did not get it"}, g.own(t))
			assert.Equal(t, []string{"denied"}, g.Headers[broker.OutcomeHeader])
			assert.NotContains(t, string(raw), "ops@example", "the guest never learns who decided")
			assert.NotContains(t, string(raw), "not today", "nor what they wrote")
			assert.Empty(t, up.requests(), "a refused call never reaches the upstream")

			e := r.Trace()[0]
			assert.Equal(t, broker.Denied, e.Outcome)
			assert.Equal(t, tc.error, e.Reason)
			require.NotNil(t, e.Approval)
			assert.Equal(t, tc.decision, e.Approval.Decision)
			a := r.Finish(broker.StatusOK, nil)
			tc.counts.WaitMs = a.Approvals.WaitMs
			assert.Equal(t, &tc.counts, a.Approvals)
			assert.Equal(t, 1, a.Denied)
		})
	}
}

func TestApprovalTimeoutAndRunEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := &script{answer: func(*http.Request) (*http.Response, error) { return inMemReply(200, ""), nil }}
		r := gatedRun(t, up, neverAnswers)
		t0 := time.Now()
		resp := pay(r, `{}`)
		assert.Equal(t, 30*time.Second, time.Since(t0), "the wait is approvals.timeout, on the fake clock")
		assert.Equal(t, 403, resp.Status)
		assert.Contains(t, string(resp.Body), `"approval_timeout"`)
		e := r.Trace()[0]
		assert.Equal(t, "timeout", e.Approval.Decision)
		assert.Equal(t, 30000.0, e.Approval.WaitMs)

		// The run's own deadline ends the wait early, and the call is still refused.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp = r.Call(ctx, broker.Request{Method: "DELETE", Path: "/pets/1"})
		assert.Equal(t, 403, resp.Status)
		assert.Contains(t, string(resp.Body), `"approval_timeout"`)
		assert.Equal(t, 5000.0, r.Trace()[1].Approval.WaitMs)
		assert.Empty(t, up.requests())
		a := r.Finish(broker.StatusTimeout, nil)
		assert.Equal(t, &broker.ApprovalCounts{Requested: 2, TimedOut: 2, WaitMs: 35000}, a.Approvals)
	})
}

func TestApprovalBudgetOnceAndMaxPerRun(t *testing.T) {
	up := &script{answer: func(*http.Request) (*http.Response, error) { return inMemReply(200, ""), nil }}
	asked := 0
	r := gatedRun(t, up, approverFunc(func(context.Context, broker.ApprovalRequest) broker.ApprovalAnswer {
		asked++
		return broker.ApprovalAnswer{Decision: broker.ApprovalDeclined}
	}), "")
	for range 3 {
		assert.Equal(t, 403, pay(r, `{}`).Status)
	}
	assert.Equal(t, 2, asked, "max_per_run: the third call is refused unasked")
	assert.Contains(t, r.Trace()[2].Approval.Reason, "max_per_run")
	assert.Equal(t, "approval_unavailable", r.Trace()[2].Reason)
	a := r.Finish(broker.StatusOK, nil)
	assert.Equal(t, &broker.ApprovalCounts{Requested: 2, Declined: 2, Unavailable: 1}, a.Approvals)
	assert.Equal(t, 3, r.State().Counters.Denied)
}

func TestApprovalBudgetChargedBeforeAsking(t *testing.T) {
	up := &script{answer: func(*http.Request) (*http.Response, error) { return inMemReply(200, ""), nil }}
	asked := 0
	p := writeProfile(t, "http://api.test", `routes: [POST /payments]
budget: {calls: 1}
approvals: {routes: [POST /payments]}
`)
	r, err := broker.New(broker.Config{Profile: p, Transport: up, Approver: approverFunc(func(context.Context, broker.ApprovalRequest) broker.ApprovalAnswer {
		asked++
		return broker.ApprovalAnswer{Decision: broker.ApprovalDeclined}
	})})
	require.NoError(t, err)
	assert.Equal(t, 403, pay(r, `{}`).Status, "declined, and it cost the one call of budget")
	assert.Equal(t, 429, pay(r, `{}`).Status, "over budget: nobody is asked")
	assert.Equal(t, 1, asked)
	assert.Empty(t, up.requests())
}

// A breaker that opened while a call waited sheds it after the approval, and gives its budget
// back; a probe that closes the breaker lets the next approved call go, charged once.
func TestApprovalBreakerRecheckedAfterWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		health := 503
		up := &script{answer: func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			if req.URL.RequestURI() == "/status" {
				return inMemReply(health, ""), nil
			}
			if req.URL.RequestURI() == "/pets" {
				return inMemReply(503, "", "Retry-After", "20"), nil
			}
			return inMemReply(200, ""), nil
		}}
		release := make(chan struct{}, 1)
		asked := 0
		r := gatedRun(t, up, approverFunc(func(ctx context.Context, q broker.ApprovalRequest) broker.ApprovalAnswer {
			asked++
			<-release
			return broker.ApprovalAnswer{Decision: broker.ApprovalGranted, Channel: "admin"}
		}))
		done := make(chan broker.Response)
		go func() { done <- pay(r, `{"n":1}`) }()
		synctest.Wait() // the payment waits for its person
		assert.Equal(t, 503, r.Call(context.Background(), broker.Request{Method: "GET", Path: "/pets"}).Status,
			"the run's other calls go on while one waits")
		time.Sleep(2 * time.Second) // past the probe interval
		release <- struct{}{}
		resp := <-done
		assert.Equal(t, 503, resp.Status, "the breaker opened during the wait: shed after the approval")
		e := r.Trace()[0]
		assert.Equal(t, broker.Shed, e.Outcome)
		assert.Equal(t, broker.ProbeNotReady, e.Probe)
		assert.Equal(t, "granted", e.Approval.Decision)

		mu.Lock()
		health = 200
		mu.Unlock()
		time.Sleep(2 * time.Second)
		release <- struct{}{}
		assert.Equal(t, 200, pay(r, `{"n":2}`).Status, "a probe answering 2xx closes the breaker and the call leaves")
		assert.Equal(t, broker.ProbeOK, r.Trace()[2].Probe)
		r.Call(context.Background(), broker.Request{Method: "GET", Path: "/pets"})
		assert.Equal(t, broker.Forwarded, r.Trace()[3].Outcome,
			"budget 3 = the first GET, the forwarded payment, this GET: the shed payment gave its unit back")
		assert.Equal(t, 429, pay(r, `{"n":3}`).Status, "over budget: refused without asking")
		assert.Equal(t, 2, asked)
		a := r.Finish(broker.StatusOK, nil)
		assert.Equal(t, 2, a.Approvals.Granted)
		assert.Equal(t, 3, a.Forwarded)
	})
}

func TestUnmarkedCallsHaveNoApprovalRecords(t *testing.T) {
	up := &script{answer: func(*http.Request) (*http.Response, error) { return inMemReply(200, ""), nil }}
	r := gatedRun(t, up, nil)
	assert.Equal(t, 200, r.Call(context.Background(), broker.Request{Method: "GET", Path: "/pets"}).Status)
	assert.Nil(t, r.Trace()[0].Approval)
	assert.NotContains(t, traceLines(t, r)[0], "approval")

	plain := newRun(t, writeProfile(t, "http://api.test", petRoutes), up)
	plain.Call(context.Background(), broker.Request{Method: "GET", Path: "/pets"})
	assert.NotContains(t, string(plain.Finish(broker.StatusOK, nil).Line()), "approvals", "no approvals block, no audit field")
}

func TestSummarizeBody(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"", "(no body)"},
		{`{"b":[1,2.50,"x"], "a":null}`, `{"a":null,"b":[1,2.50,"x"]}`},
		{`{"to":"a\u202eb"}`, `{"to":"a\u202eb"}`},
		{"{\"to\":\"a\u202eb\u0085c\u007fd\"}", `{"to":"a\u202eb\u0085c\u007fd"}`},
		{"refund\x1b[31m now\\u0000", `refund\u001b[31m now\\u0000`},
		{"\xff\xfe", "(2 bytes, not text)"},
		{"line1\nline2", `line1\u000aline2`},
		// A key twice in one object: a parser may take either value, so it is shown as sent.
		{` {"to":"evil","cents":1,"to":"acme"}`, `(JSON with the key "to" twice in one object, shown as sent) {"to":"evil","cents":1,"to":"acme"}`},
		{`[{"a":1},{"a":2,"b":{"a":3}}]`, `[{"a":1},{"a":2,"b":{"a":3}}]`},
	} {
		assert.Equal(t, tc.want, broker.SummarizeBody([]byte(tc.body)), "%q", tc.body)
	}
	big := make([]byte, 10000)
	for i := range big {
		big[i] = 'a'
	}
	s := broker.SummarizeBody(big)
	assert.LessOrEqual(t, len(s), broker.MaxSummaryBytes+40)
	assert.Contains(t, s, "(10000 bytes in all)")
}

func TestCallHashBindsEveryPart(t *testing.T) {
	json := http.Header{"Content-Type": {"application/json"}}
	base := broker.CallHash("POST", "/payments", "a=1", json, []byte(`{"x":1}`))
	assert.Len(t, base, 64)
	for _, other := range []string{
		broker.CallHash("PUT", "/payments", "a=1", json, []byte(`{"x":1}`)),
		broker.CallHash("POST", "/payments/", "a=1", json, []byte(`{"x":1}`)),
		broker.CallHash("POST", "/payments", "a=2", json, []byte(`{"x":1}`)),
		broker.CallHash("POST", "/payments", "a=1", json, []byte(`{"x":1} `)),
		broker.CallHash("POST", "/payments", "", json, []byte(`{"x":1}`)),
		broker.CallHash("POST", "/paymentsa=1", "", json, []byte(`{"x":1}`)),
		broker.CallHash("POST", "/payments", "a=1", nil, []byte(`{"x":1}`)),
		broker.CallHash("POST", "/payments", "a=1", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, []byte(`{"x":1}`)),
		broker.CallHash("POST", "/payments", "a=1", http.Header{"Content-Type": {"application/json"}, "If-Match": {"*"}}, []byte(`{"x":1}`)),
		broker.CallHash("POST", "/payments", "a=1", http.Header{"Content-Type": {"application/json", "text/plain"}}, []byte(`{"x":1}`)),
	} {
		assert.NotEqual(t, base, other)
	}
	a := http.Header{"If-Match": {`"v1"`, `"v2"`}, "Accept": {"*/*"}}
	b := http.Header{"Accept": {"*/*"}, "If-Match": {`"v1"`, `"v2"`}}
	assert.Equal(t, broker.CallHash("GET", "/p", "", a, nil), broker.CallHash("GET", "/p", "", b, nil), "a map's order is not the call's")
	swapped := http.Header{"If-Match": {`"v2"`, `"v1"`}, "Accept": {"*/*"}}
	assert.NotEqual(t, broker.CallHash("GET", "/p", "", a, nil), broker.CallHash("GET", "/p", "", swapped, nil), "a name's values go out in order")
}

func TestHeaderLinesEscapeWhatCouldHide(t *testing.T) {
	// A literal "\u202e" typed by the tool reads differently from the override rune itself.
	got := broker.HeaderLines(http.Header{"User-Agent": {"tool\\u202e \u202edlrow"}, "Accept": {"*/*"}})
	assert.Equal(t, []string{"Accept: */*", `User-Agent: tool\\u202e \u202edlrow`}, got)
}

// Hammer: gated and ungated calls from many goroutines at once; every approval is counted once,
// and the counters agree with the trace and with what reached the upstream.
func TestApprovalHammer(t *testing.T) {
	var forwarded sync.Map
	up := &script{answer: func(r *http.Request) (*http.Response, error) {
		forwarded.Store(r.Method+" "+r.URL.RequestURI(), true)
		return inMemReply(200, ""), nil
	}}
	p := writeProfile(t, "http://api.test", `routes: [GET /pets/*, DELETE /pets/*]
budget: {calls: 1000}
approvals: {routes: [DELETE /pets/*], max_per_run: 100}
`)
	r, err := broker.New(broker.Config{Profile: p, Transport: up, Approver: approverFunc(func(_ context.Context, q broker.ApprovalRequest) broker.ApprovalAnswer {
		if q.Path[len(q.Path)-1]%2 == 0 {
			return broker.ApprovalAnswer{Decision: broker.ApprovalGranted}
		}
		return broker.ApprovalAnswer{Decision: broker.ApprovalDeclined}
	})})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			method := "GET"
			if i%2 == 0 {
				method = "DELETE"
			}
			r.Call(context.Background(), broker.Request{Method: method, Path: fmt.Sprintf("/pets/%d", i/2)})
		})
	}
	wg.Wait()
	a := r.Finish(broker.StatusOK, nil)
	assert.Equal(t, 30, a.Approvals.Requested)
	assert.Equal(t, a.Approvals.Requested, a.Approvals.Granted+a.Approvals.Declined)
	assert.Equal(t, 15, a.Approvals.Granted, "DELETE /pets/N is granted for even N")
	assert.Equal(t, 30+15, a.Forwarded)
	assert.Equal(t, 15, a.Denied)
	n := 0
	forwarded.Range(func(k, _ any) bool {
		n++
		if call := k.(string); strings.HasPrefix(call, "DELETE") {
			var id int
			fmt.Sscanf(call, "DELETE /pets/%d", &id)
			assert.Zero(t, id%2, "a declined call reached the upstream: %s", call)
		}
		return true
	})
	assert.Equal(t, 45, n, "30 GETs and the 15 granted DELETEs, each once")
	gated := 0
	for _, e := range r.Trace() {
		if e.Approval != nil {
			gated++
			assert.Equal(t, e.Method, "DELETE")
		}
	}
	assert.Equal(t, 30, gated)
}

// The operator forces the route open while a call waits for its person: the yes does not let it
// leave, and nobody is asked about a call of a route already forced open.
func TestApprovalForcedRouteRecheckedAfterWait(t *testing.T) {
	up := &script{answer: func(*http.Request) (*http.Response, error) { return inMemReply(200, ""), nil }}
	var forced atomic.Bool
	asked := 0
	p := writeProfile(t, "http://api.test", gatedProfile)
	r, err := broker.New(broker.Config{Profile: p, Transport: up,
		ForcedRoute: func(route string) (string, bool) { return "INC-7", forced.Load() && route == "POST /payments" },
		Approver: approverFunc(func(context.Context, broker.ApprovalRequest) broker.ApprovalAnswer {
			asked++
			forced.Store(true) // the operator acts while the person reads
			return broker.ApprovalAnswer{Decision: broker.ApprovalGranted}
		})})
	require.NoError(t, err)
	resp := pay(r, `{}`)
	assert.Equal(t, 503, resp.Status)
	assert.Contains(t, r.Trace()[0].Reason, broker.ForcedRouteReason+"POST /payments: INC-7")
	assert.Equal(t, 503, pay(r, `{}`).Status)
	assert.Equal(t, 1, asked, "a call of a forced route is shed before anyone is asked")
	assert.Empty(t, up.requests())
}
