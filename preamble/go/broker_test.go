package plimsoll

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// withBroker routes this package's calls to a real broker run in front of handler, for the length
// of the test. The Go preamble's logic is thereby tested natively; the wasm build is tested by the
// conformance suite.
func withBroker(t *testing.T, handler http.HandlerFunc, profileExtra string) *broker.Broker {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "test.yaml")
	text := "base_url: " + srv.URL + "/v1\ncredential:\n  scheme: Bearer\n  env: TOKEN\n" + profileExtra
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	p, err := profiles.LoadFile(path)
	require.NoError(t, err)
	run, err := broker.New(broker.Config{Profile: p, Secret: profiles.NewSecret("tok")})
	require.NoError(t, err)
	old := roundTrip
	roundTrip = (&conn{imports: &brokerABI{run: run}}).exchange
	t.Cleanup(func() { roundTrip = old })
	return run
}

// brokerABI plays the host's side of the ABI over a broker run, two-step rule included.
type brokerABI struct {
	run     *broker.Broker
	pending []byte
}

func (b *brokerABI) hostCall(req, buf []byte) int32 {
	resp := b.run.CallEnvelope(context.Background(), append([]byte(nil), req...))
	b.pending = nil
	if len(resp) <= len(buf) {
		return int32(copy(buf, resp))
	}
	b.pending = resp
	return int32(len(resp))
}

func (b *brokerABI) hostResponse(buf []byte) int32 {
	if b.pending == nil {
		return -2
	}
	n := copy(buf, b.pending)
	b.pending = nil
	return int32(n)
}

func TestAgainstTheBroker(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	calls := 0
	withBroker(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %s|%s|%s|%s", r.Method, r.RequestURI, r.Header.Get("Authorization"),
			strings.Join(r.Header.Values("X-Tag"), ","), r.Header.Get("Content-Type"), body))
		calls++
		n := calls
		mu.Unlock()
		switch {
		case r.URL.Path == "/v1/big":
			w.Write([]byte(strings.Repeat("0123456789", 10_000)))
		case r.URL.Path == "/v1/items" && n == 3:
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(503)
		default:
			w.Header().Add("X-Multi", "a")
			w.Header().Add("X-Multi", "b")
			w.WriteHeader(201)
			w.Write([]byte{0, 1, 0xff})
		}
	}, "routes: [GET /items, POST /items, GET /big]\nrequest_headers: [X-Tag]\nbudget:\n  calls: 4\n")

	resp, err := Post("/items", map[string]string{"name": "anchor"}, WithHeader("X-Tag", "a", "b"), WithQuery("t", "x y"))
	require.NoError(t, err)
	assert.Equal(t, 201, resp.Status)
	assert.True(t, resp.OK())
	assert.Equal(t, []byte{0, 1, 0xff}, resp.Body)
	assert.Equal(t, []string{"a", "b"}, resp.Header.Values("x-multi"))

	big, err := Get("/big")
	require.NoError(t, err)
	assert.Len(t, big.Body, 100_000, "fetched in two steps")

	resp, err = Get("/items")
	require.NoError(t, err, "an upstream 503 is a forwarded response")
	assert.Equal(t, 503, resp.Status)

	_, err = Get("/items")
	var oe *OutcomeError
	require.ErrorAs(t, err, &oe)
	assert.ErrorIs(t, err, ErrShed)
	assert.Equal(t, 503, oe.Status)
	assert.InDelta(t, 30, oe.RetryAfter.Seconds(), 1)
	assert.Contains(t, oe.Reason, "breaker open")

	_, err = Get("/admin")
	assert.ErrorIs(t, err, ErrDenied)
	_, err = Get("/items/../admin")
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = Get("/big", WithHeader("Cookie", "a=b"))
	assert.ErrorIs(t, err, ErrInvalid)

	assert.Equal(t, []string{
		"POST /v1/items?t=x%20y Bearer tok|a,b|application/json|{\"name\":\"anchor\"}",
		"GET /v1/big Bearer tok|||",
		"GET /v1/items Bearer tok|||",
	}, seen)
}

func TestOverBudgetAndFailed(t *testing.T) {
	withBroker(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/slow" {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		}
	}, "routes: [GET /ok, GET /slow]\nbudget:\n  calls: 2\nlimits:\n  call_timeout: 50ms\n")
	_, err := Get("/ok")
	require.NoError(t, err)
	_, err = Get("/slow")
	var oe *OutcomeError
	require.ErrorAs(t, err, &oe)
	assert.True(t, errors.Is(err, ErrFailed))
	assert.Equal(t, 504, oe.Status)
	_, err = Get("/ok")
	assert.ErrorIs(t, err, ErrOverBudget)
}
