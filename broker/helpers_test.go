package broker_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// secret is the credential every test run carries. Tests assert it never leaks to the guest.
const secret = "sk-live-7f3a9c2e"

// credHeader and credScheme are how the test profiles send the credential.
const (
	credHeader = "X-Api-Key"
	credScheme = "Key"
)

// seen is one request as it reached an upstream.
type seen struct {
	Method     string
	RequestURI string
	Host       string
	Header     http.Header
	Body       []byte
	Length     int64
	Chunked    bool
}

// upstream is a real loopback API that records every request it receives and counts every
// connection made to it, so a test can prove that nothing reached it.
type upstream struct {
	*httptest.Server
	handler http.HandlerFunc
	dials   atomic.Int64

	mu   sync.Mutex
	reqs []seen
}

// newUpstream starts a recording server on 127.0.0.1. handler may be nil (200, "ok").
func newUpstream(t testing.TB, handler http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{handler: handler}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, seen{Method: r.Method, RequestURI: r.RequestURI, Host: r.Host,
			Header: r.Header.Clone(), Body: body, Length: r.ContentLength,
			Chunked: len(r.TransferEncoding) > 0})
		h := u.handler
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if h == nil {
			_, _ = io.WriteString(w, "ok")
			return
		}
		h(w, r)
	}))
	u.Server.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.dials.Add(1)
		}
	}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

// setHandler changes how the upstream answers from now on.
func (u *upstream) setHandler(h http.HandlerFunc) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.handler = h
}

func (u *upstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.reqs...)
}

// untouched asserts that nothing reached the upstream: no request and no connection.
func (u *upstream) untouched(t testing.TB, msgAndArgs ...any) {
	t.Helper()
	require.Empty(t, u.requests(), msgAndArgs...)
	require.Zero(t, u.dials.Load(), msgAndArgs...)
}

// writeProfile writes a YAML profile for baseURL and loads it the way the CLI does. body holds
// the rest of the profile (routes, health_check, budget, limits).
func writeProfile(t testing.TB, baseURL, body string) *profiles.Profile {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "petstore.yaml")
	yaml := "base_url: " + baseURL + "\n" +
		"credential:\n  header: " + credHeader + "\n  scheme: " + credScheme + "\n  env: PETSTORE_TOKEN\n" + body
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	p, err := profiles.LoadFile(path)
	require.NoError(t, err)
	return p
}

// petRoutes is the grant most tests use.
const petRoutes = `request_headers: [X-Tag, X-A, X-Call, X-Run]
routes:
  - GET /pets
  - GET /pets/*
  - POST /pets
  - PUT /pets/*
  - GET /pets/*/toys
`

func newRun(t testing.TB, p *profiles.Profile, rt http.RoundTripper) *broker.Broker {
	t.Helper()
	r, err := broker.New(broker.Config{Profile: p, Secret: profiles.NewSecret(secret), Transport: rt,
		RunID: "run-test", Tool: "tool.js"})
	require.NoError(t, err)
	return r
}

// guestResponse is a decoded response envelope, as the guest reads it.
type guestResponse struct {
	Status     int                 `json:"status"`
	Headers    map[string][]string `json:"headers"`
	Body       *string             `json:"body"`
	BodyBase64 *string             `json:"body_base64"`
}

func (g guestResponse) bytes(t testing.TB) []byte {
	t.Helper()
	if g.Body != nil {
		require.Nil(t, g.BodyBase64, "exactly one of body and body_base64")
		return []byte(*g.Body)
	}
	require.NotNil(t, g.BodyBase64, "exactly one of body and body_base64")
	b, err := base64.StdEncoding.DecodeString(*g.BodyBase64)
	require.NoError(t, err)
	return b
}

// ownBody is the JSON body of an answer the broker gave itself.
type ownBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

func (g guestResponse) own(t testing.TB) ownBody {
	t.Helper()
	var b ownBody
	dec := json.NewDecoder(bytes.NewReader(g.bytes(t)))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&b))
	return b
}

func decodeEnvelope(t testing.TB, raw []byte) guestResponse {
	t.Helper()
	require.NotContains(t, string(raw), "\n", "a response envelope is one line")
	var g guestResponse
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&g), "%s", raw)
	return g
}

// envelope builds a request envelope from fields, JSON-encoding each.
func envelope(t testing.TB, fields map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(fields)
	require.NoError(t, err)
	return b
}

// call sends one envelope through the run and decodes the answer.
func call(t testing.TB, r *broker.Broker, raw []byte) guestResponse {
	t.Helper()
	return decodeEnvelope(t, r.CallEnvelope(context.Background(), raw))
}

func get(t testing.TB, r *broker.Broker, path string) guestResponse {
	t.Helper()
	return call(t, r, envelope(t, map[string]any{"method": "GET", "path": path}))
}

// traceLines renders the trace as the CLI writes it and checks each entry is one line.
func traceLines(t testing.TB, r *broker.Broker) []string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, broker.WriteTrace(&buf, r.Trace()))
	out := buf.String()
	for i := 0; i < len(out); i++ {
		if c := out[i]; (c < 0x20 && c != '\n') || c == 0x7f {
			t.Fatalf("trace holds a raw control byte %#x: %q", c, out)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		lines = nil
	}
	require.Len(t, lines, len(r.Trace()), "one line per trace entry")
	for _, l := range lines {
		require.True(t, json.Valid([]byte(l)), "%q", l)
	}
	return lines
}

// rtFunc is an in-memory upstream for tests under testing/synctest, where loopback
// servers do not work.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// inMemReply builds an in-memory response.
func inMemReply(status int, body string, kv ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), ProtoMajor: 1, ProtoMinor: 1}
}

// script is an in-memory upstream that records the requests it answers.
type script struct {
	mu     sync.Mutex
	seen   []*http.Request
	answer func(*http.Request) (*http.Response, error)
}

func (s *script) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.seen = append(s.seen, r)
	s.mu.Unlock()
	return s.answer(r)
}

// overloadedOnce is an in-memory upstream whose first call answers status with a Retry-After of
// retryAfter and every later call 200, while the health route /status answers health.
func overloadedOnce(status int, retryAfter string, health int) *script {
	var calls atomic.Int32
	return &script{answer: func(r *http.Request) (*http.Response, error) {
		if r.URL.RequestURI() == "/status" {
			return inMemReply(health, ""), nil
		}
		if calls.Add(1) == 1 {
			return inMemReply(status, "", "Retry-After", retryAfter), nil
		}
		return inMemReply(200, ""), nil
	}}
}

func (s *script) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.seen...)
}

// paths lists the request paths the script saw, in order.
func (s *script) paths() []string {
	var out []string
	for _, r := range s.requests() {
		out = append(out, r.URL.RequestURI())
	}
	return out
}
