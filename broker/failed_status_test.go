package broker_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/stretchr/testify/assert"
)

// A failed call still records what the upstream said.

// brokenBody fails part-way, as a connection reset mid-body does.
type brokenBody struct{ sent bool }

func (b *brokenBody) Read(p []byte) (int, error) {
	if b.sent {
		return 0, errors.New("connection reset by peer")
	}
	b.sent = true
	return copy(p, "partial"), nil
}
func (b *brokenBody) Close() error { return nil }

// A 503 whose body never fully arrives still says the API is overloaded: it opens the window.
func TestOverloadStatusCountsEvenWhenTheBodyFails(t *testing.T) {
	upstream := rtFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {"10"}}, Body: &brokenBody{}, ContentLength: -1}, nil
	})
	run := newRun(t, writeProfile(t, "http://api.test", petRoutes), upstream)

	first := run.Call(context.Background(), broker.Request{Method: "GET", Path: "/pets"})
	second := run.Call(context.Background(), broker.Request{Method: "GET", Path: "/pets"})

	assert.Equal(t, 502, first.Status)
	assert.Equal(t, 503, second.Status)
	trace := run.Trace()
	assert.Equal(t, broker.Failed, trace[0].Outcome)
	assert.Equal(t, 503, trace[0].UpstreamStatus, "the upstream did answer, with 503")
	assert.Equal(t, broker.Shed, trace[1].Outcome)
	assert.Equal(t, 1, run.Counters().BreakerOpens)
}

// A failed over-cap body keeps the status the upstream answered in the trace.
func TestOverCapBodyKeepsUpstreamStatus(t *testing.T) {
	upstream := rtFunc(func(*http.Request) (*http.Response, error) {
		return inMemReply(200, strings.Repeat("x", 2048)), nil
	})
	run := newRun(t, writeProfile(t, "http://api.test", petRoutes+"limits:\n  max_response_bytes: 1024\n"), upstream)

	resp := run.Call(context.Background(), broker.Request{Method: "GET", Path: "/pets"})

	assert.Equal(t, 502, resp.Status)
	assert.Equal(t, 200, run.Trace()[0].UpstreamStatus)
	assert.Contains(t, run.Trace()[0].Reason, "limits.max_response_bytes (1KiB)")
}
