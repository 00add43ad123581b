package broker_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
)

// heldBody is a body that never ends until it is closed, as the raw connection a 101 hands over
// is, or a body whose transport ignores the request's context.
type heldBody struct {
	once   sync.Once
	closed chan struct{}
}

func newHeldBody() *heldBody { return &heldBody{closed: make(chan struct{})} }

func (b *heldBody) Read([]byte) (int, error) {
	<-b.closed
	return 0, errors.New("use of closed connection")
}

func (b *heldBody) Close() error { b.once.Do(func() { close(b.closed) }); return nil }

// A 101 is not an answer: the call fails at once with a reason, and its body is closed.
func TestSwitchingProtocolsIsAFailedCall(t *testing.T) {
	body := newHeldBody()
	run := newRun(t, writeProfile(t, "http://api.test", petRoutes), rtFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 101, Header: http.Header{"Upgrade": {"websocket"}}, Body: body, ContentLength: -1}, nil
	}))

	resp := doGet(run, "/pets")

	assert.Equal(t, http.StatusBadGateway, resp.Status)
	assert.Contains(t, string(resp.Body), "upstream answered 101 Switching Protocols, not a final response")
	assert.Equal(t, 101, run.Trace()[0].UpstreamStatus)
	assert.Equal(t, broker.Counters{HostCalls: 1, Failed: 1}, run.Counters())
	<-body.closed
}

// A health probe answered with 101 is not ready, and ends at once rather than reading the
// connection.
func TestProbeAnsweredWithSwitchingProtocols(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &script{answer: func(r *http.Request) (*http.Response, error) {
			if r.URL.RequestURI() == "/status" {
				return &http.Response{StatusCode: 101, Header: http.Header{}, Body: newHeldBody(), ContentLength: -1}, nil
			}
			return inMemReply(503, "", "Retry-After", "10"), nil
		}}
		run := newRun(t, writeProfile(t, "http://api.test", healthProfile), api)
		c := newClock()
		doGet(run, "/pets") // opens [0, 10s)
		c.at(ms(1000))

		start := time.Now()
		resp := doGet(run, "/pets")

		assert.Zero(t, time.Since(start), "the probe does not wait on the connection")
		assertShed(t, resp, "9")
		assert.Contains(t, string(resp.Body), "health probe GET /status answered 101")
		assert.Equal(t, broker.Counters{HostCalls: 2, Forwarded: 1, Shed: 1, Probes: 1, BreakerOpens: 1}, run.Counters())
	})
}

// A body read ends at the call deadline even when the transport does not tie the body to the
// request's context: the broker closes it.
func TestBodyReadEndsAtTheCallDeadlineWhateverTheTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run := newRun(t, writeProfile(t, "http://api.test", petRoutes+"limits:\n  call_timeout: 3s\n"), rtFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: newHeldBody(), ContentLength: -1}, nil
		}))
		start := time.Now()

		resp := doGet(run, "/pets")

		assert.Equal(t, 3*time.Second, time.Since(start))
		assert.Equal(t, http.StatusGatewayTimeout, resp.Status)
		assert.Contains(t, string(resp.Body), "did not answer within limits.call_timeout (3s)")
	})
}

// The run's end ends a body read too.
func TestBodyReadEndsWithTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run := newRun(t, writeProfile(t, "http://api.test", petRoutes), rtFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: newHeldBody(), ContentLength: -1}, nil
		}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()

		resp := run.Call(ctx, broker.Request{Method: "GET", Path: "/pets"})

		require.Equal(t, http.StatusBadGateway, resp.Status)
		assert.Contains(t, string(resp.Body), "call canceled: the run is ending")
	})
}

var _ io.ReadCloser = (*heldBody)(nil)

// On net/http's own transport the broker leaves the body to the request's context, which that
// transport honours: a body that stops arriving still ends the call at the call deadline. The
// server holds the body until the broker gives up, so the test ends with the deadline, never
// before it.
func TestBodyReadEndsAtTheCallDeadlineOnNetHTTPsTransport(t *testing.T) {
	gaveUp := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "part of it")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the connection closed: the broker stopped reading
		close(gaveUp)
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	run := newRun(t, writeProfile(t, srv.URL, petRoutes+"limits:\n  call_timeout: 200ms\n"), tr)

	resp := doGet(run, "/pets")

	assert.Equal(t, http.StatusGatewayTimeout, resp.Status)
	assert.Contains(t, string(resp.Body), "did not answer within limits.call_timeout (200ms)")
	<-gaveUp
}
