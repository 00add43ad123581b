package broker_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

func TestForwardSendsExactBytes(t *testing.T) {
	api := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("X-Multi", "1")
		w.Header().Add("X-Multi", "2")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":42}`)
	})
	p := writeProfile(t, api.URL+"/v1", petRoutes)
	run := newRun(t, p, nil)

	body := "h\u00e9llo \"world\"\n\x00end"
	g := call(t, run, req(t, "POST", "/pets",
		"query", "tag=a&tag=b%2Cc&empty=&x=%7E&y=%2F&z=a+b",
		"headers", map[string]any{
			"Accept":       "application/json",
			"X-Tag":        []string{"a", "b"},
			"content-type": "text/plain; charset=utf-8",
			"User-Agent":   "tool/1.0",
		},
		"body", body))

	assert.Equal(t, http.StatusCreated, g.Status)
	assert.Equal(t, `{"id":42}`, string(g.bytes(t)))
	assert.Equal(t, []string{"1", "2"}, g.Headers["X-Multi"])
	assert.Equal(t, []string{"application/json"}, g.Headers["Content-Type"])
	assert.NotContains(t, g.Headers, broker.OutcomeHeader, "a forwarded answer is the upstream's")

	reqs := api.requests()
	require.Len(t, reqs, 1)
	s := reqs[0]
	assert.Equal(t, "POST", s.Method)
	assert.Equal(t, "/v1/pets?tag=a&tag=b%2Cc&empty=&x=%7E&y=%2F&z=a+b", s.RequestURI)
	assert.Equal(t, api.Listener.Addr().String(), s.Host)
	assert.Equal(t, []string{credScheme + " " + secret}, s.Header[credHeader])
	assert.Equal(t, []string{"a", "b"}, s.Header["X-Tag"])
	assert.Equal(t, []string{"application/json"}, s.Header["Accept"])
	assert.Equal(t, []string{"text/plain; charset=utf-8"}, s.Header["Content-Type"])
	assert.Equal(t, []string{"tool/1.0"}, s.Header["User-Agent"])
	assert.Equal(t, body, string(s.Body))
	assert.Equal(t, int64(len(body)), s.Length)
	assert.False(t, s.Chunked)
	for _, h := range []string{"Authorization", "Cookie", "Forwarded", "X-Forwarded-For", OutcomeHeaderName} {
		assert.NotContains(t, s.Header, h)
	}

	trace := run.Trace()
	require.Len(t, trace, 1)
	e := trace[0]
	assert.Equal(t, broker.TraceEntry{Seq: 1, TMs: e.TMs, Method: "POST", Path: "/pets", Route: "POST /pets",
		Outcome: broker.Forwarded, Status: 201, UpstreamStatus: 201, LatencyMs: e.LatencyMs}, e)
	assert.Equal(t, broker.Counters{HostCalls: 1, Forwarded: 1}, run.Counters())
}

// OutcomeHeaderName is spelled out so the test does not lean on the constant it checks.
const OutcomeHeaderName = "Plimsoll-Outcome"

func TestForwardPathBytesAndBaseURL(t *testing.T) {
	api := newUpstream(t, nil)
	cases := []struct{ base, path, query, want string }{
		{api.URL, "/pets/42", "", "/pets/42"},
		{api.URL + "/", "/pets/42", "", "/pets/42"},
		{api.URL + "/api/v2", "/pets/a:b@c!$&'()*+,=~-_.x%20y%41", "", "/api/v2/pets/a:b@c!$&'()*+,=~-_.x%20y%41"},
		{api.URL + "/api/v2/", "/pets", "q=%E2%9C%93", "/api/v2/pets?q=%E2%9C%93"},
		{api.URL + "/v1", "/pets/%00", "", "/v1/pets/%00"},
		{api.URL + "/v1", "/pets/1/toys", "a=1&a=1", "/v1/pets/1/toys?a=1&a=1"},
	}
	for _, tc := range cases {
		run := newRun(t, writeProfile(t, tc.base, petRoutes), nil)
		f := map[string]any{"method": "GET", "path": tc.path}
		if tc.query != "" {
			f["query"] = tc.query
		}
		g := call(t, run, envelope(t, f))
		require.Equal(t, http.StatusOK, g.Status, "%s %s: %s", tc.base, tc.path, g.bytes(t))
		reqs := api.requests()
		assert.Equal(t, tc.want, reqs[len(reqs)-1].RequestURI, "%s + %s", tc.base, tc.path)
	}
}

func TestForwardBinaryBodiesRoundTrip(t *testing.T) {
	api := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	})
	run := newRun(t, writeProfile(t, api.URL, petRoutes), nil)
	bin := make([]byte, 512)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	g := call(t, run, req(t, "POST", "/pets", "body_base64", base64.StdEncoding.EncodeToString(bin)))
	require.Equal(t, http.StatusOK, g.Status)
	assert.Nil(t, g.Body, "invalid UTF-8 travels as body_base64")
	require.NotNil(t, g.BodyBase64)
	assert.Equal(t, bin, g.bytes(t))
	reqs := api.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, bin, reqs[0].Body)
	assert.Equal(t, int64(len(bin)), reqs[0].Length)

	// Valid UTF-8 comes back as body; an empty body is "body":"".
	g = call(t, run, req(t, "POST", "/pets", "body", "\u2713 ok"))
	require.NotNil(t, g.Body)
	assert.Equal(t, "\u2713 ok", *g.Body)
	g = call(t, run, req(t, "POST", "/pets"))
	require.NotNil(t, g.Body)
	assert.Equal(t, "", *g.Body)
	assert.Nil(t, g.BodyBase64)
	assert.Equal(t, int64(0), api.requests()[2].Length)
}

// rawReply answers every request with the given bytes over the hijacked connection, then closes it.
func rawReply(raw string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		_, _ = buf.WriteString(raw)
		_ = buf.Flush()
	}
}

func TestForwardStripsHopByHopHeaders(t *testing.T) {
	api := newUpstream(t, rawReply("HTTP/1.1 200 OK\r\n"+
		"Content-Type: text/plain\r\n"+
		"Content-Length: 2\r\n"+
		"Connection: keep-alive, X-Hop-One, x-hop-two\r\n"+
		"X-Hop-One: 1\r\n"+
		"X-Hop-Two: 2\r\n"+
		"Keep-Alive: timeout=5\r\n"+
		"Proxy-Connection: keep-alive\r\n"+
		"Proxy-Authenticate: Basic realm=x\r\n"+
		"Te: trailers\r\n"+
		"Trailer: X-Checksum\r\n"+
		"Upgrade: h2c\r\n"+
		"X-Kept: yes\r\n"+
		"Plimsoll-Outcome: shed\r\n"+
		"\r\nok"))
	run := newRun(t, writeProfile(t, api.URL, petRoutes), nil)
	g := get(t, run, "/pets")
	require.Equal(t, http.StatusOK, g.Status)
	assert.Equal(t, "ok", string(g.bytes(t)))
	for _, h := range []string{"Connection", "X-Hop-One", "X-Hop-Two", "Keep-Alive", "Proxy-Connection",
		"Proxy-Authenticate", "Te", "Trailer", "Upgrade", "Transfer-Encoding"} {
		assert.NotContains(t, g.Headers, h)
	}
	assert.NotContains(t, g.Headers, OutcomeHeaderName, "an upstream must not pass its answer off as the broker's")
	assert.Equal(t, []string{"yes"}, g.Headers["X-Kept"])
	assert.Equal(t, []string{"text/plain"}, g.Headers["Content-Type"])
	assert.Equal(t, broker.Forwarded, run.Trace()[0].Outcome)
}

func TestForwardNeverFollowsRedirects(t *testing.T) {
	other := newUpstream(t, nil)
	api := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal?k=1", http.StatusFound)
	})
	run := newRun(t, writeProfile(t, api.URL, petRoutes), nil)
	for _, method := range []string{"GET", "POST"} {
		path := "/pets"
		g := call(t, run, req(t, method, path))
		assert.Equal(t, http.StatusFound, g.Status)
		assert.Equal(t, []string{other.URL + "/steal?k=1"}, g.Headers["Location"])
	}
	assert.Len(t, api.requests(), 2, "one upstream request per call")
	other.untouched(t, "the redirect target must never be contacted")
	assert.Equal(t, broker.Counters{HostCalls: 2, Forwarded: 2}, run.Counters())
	assert.Equal(t, 302, run.Trace()[0].UpstreamStatus)
}

func TestForwardResponseCap(t *testing.T) {
	const limitYAML = petRoutes + "limits:\n  max_response_bytes: 1KiB\n"
	big := strings.Repeat("x", 2048)
	chunked := func(n int) string {
		var b strings.Builder
		for n > 0 {
			c := min(n, 100)
			fmt.Fprintf(&b, "%x\r\n%s\r\n", c, strings.Repeat("y", c))
			n -= c
		}
		return b.String() + "0\r\n\r\n"
	}
	const overCap = "upstream body is over limits.max_response_bytes (1KiB)"
	cases := []struct {
		name    string
		handler http.HandlerFunc
		status  int    // guest status
		reason  string // for failed calls
		body    string // for forwarded calls
	}{
		{"honest Content-Length over the cap", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "2048")
			_, _ = io.WriteString(w, big)
		}, 502, overCap, ""},
		{"exactly the cap", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, big[:1024])
		}, 200, "", big[:1024]},
		{"one byte over the cap", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, big[:1025])
		}, 502, overCap, ""},
		{"no Content-Length, chunked", func(w http.ResponseWriter, _ *http.Request) {
			for i := 0; i < 20; i++ {
				_, _ = io.WriteString(w, big[:100])
				w.(http.Flusher).Flush()
			}
		}, 502, overCap, ""},
		{"no Content-Length, read to close", rawReply("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + big),
			502, overCap, ""},
		{"small Content-Length lying next to a chunked body", rawReply("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n" +
			"Transfer-Encoding: chunked\r\n\r\n" + chunked(2048)), 502, overCap, ""},
		{"Content-Length over the cap, short body", rawReply("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\nshort"),
			502, overCap, ""},
		{"Content-Length larger than the body sent", rawReply("HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\nshort"),
			502, "upstream gave no usable response: unexpected EOF", ""},
		// Framing decides where a body ends: bytes after a Content-Length are not the body and
		// are never read, so the cap cannot be outrun this way either.
		{"Content-Length smaller than the bytes sent", rawReply("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n" + big),
			200, "", big[:10]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newUpstream(t, tc.handler)
			run := newRun(t, writeProfile(t, api.URL, limitYAML), nil)
			g := get(t, run, "/pets")
			assert.Equal(t, tc.status, g.Status)
			e := run.Trace()[0]
			if tc.status == 200 {
				assert.Equal(t, tc.body, string(g.bytes(t)))
				assert.Equal(t, broker.Forwarded, e.Outcome)
				return
			}
			assert.Equal(t, []string{"failed"}, g.Headers[OutcomeHeaderName])
			own := g.own(t)
			assert.Equal(t, "failed", own.Error)
			assert.Equal(t, tc.reason, own.Reason)
			assert.Equal(t, broker.Failed, e.Outcome)
			assert.Equal(t, tc.reason, e.Reason)
			assert.Equal(t, broker.Counters{HostCalls: 1, Failed: 1}, run.Counters())
			assert.Len(t, api.requests(), 1)
		})
	}
}

func TestForwardConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	run := newRun(t, writeProfile(t, "http://"+addr+"/v1", petRoutes), nil)
	for i := 0; i < 3; i++ {
		g := get(t, run, "/pets")
		assert.Equal(t, http.StatusBadGateway, g.Status)
		assert.Equal(t, []string{"failed"}, g.Headers[OutcomeHeaderName])
		reason := g.own(t).Reason
		assert.Contains(t, reason, "upstream gave no usable response")
		assert.Contains(t, reason, "connection refused")
		assert.NotContains(t, reason, secret)
	}
	c := run.Counters()
	assert.Equal(t, broker.Counters{HostCalls: 3, Failed: 3}, c, "connection failures never open the breaker")
}

// TestForwardCallTimeout runs in fake time: the upstream never answers, and the call gives up
// exactly at limits.call_timeout.
func TestForwardCallTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bodyHangs int
		hang := rtFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.RequestURI() == "/v1/pets/body" {
				bodyHangs++
				// Headers at once, then a body that never comes.
				return &http.Response{StatusCode: 200, Header: http.Header{}, Body: ctxBody{r.Context()}, ContentLength: -1}, nil
			}
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		p := writeProfile(t, "http://api.test/v1", petRoutes+"limits:\n  call_timeout: 3s\n")
		run := newRun(t, p, hang)
		for _, path := range []string{"/pets", "/pets/body"} {
			start := time.Now()
			resp := run.Call(context.Background(), broker.Request{Method: "GET", Path: path})
			assert.Equal(t, 3*time.Second, time.Since(start), "given up at the call timeout, not before or after")
			assert.Equal(t, http.StatusGatewayTimeout, resp.Status, path)
			assert.Equal(t, []string{"failed"}, resp.Headers[OutcomeHeaderName])
			assert.Contains(t, string(resp.Body), "did not answer within limits.call_timeout (3s)")
		}
		trace := run.Trace()
		require.Len(t, trace, 2)
		for _, e := range trace {
			assert.Equal(t, broker.Failed, e.Outcome)
			assert.Equal(t, 504, e.Status)
			assert.Equal(t, 3000.0, e.LatencyMs)
		}
		assert.Equal(t, int64(3000), trace[1].TMs)
		assert.Equal(t, 1, bodyHangs, "the second call hung in the body, not the headers")
		assert.Equal(t, broker.Counters{HostCalls: 2, Failed: 2}, run.Counters())
	})
}

// ctxBody is a response body that blocks until its request's context ends.
type ctxBody struct{ ctx context.Context }

func (b ctxBody) Read([]byte) (int, error) { <-b.ctx.Done(); return 0, b.ctx.Err() }
func (b ctxBody) Close() error             { return nil }

func TestForwardRunContextCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		rt := rtFunc(func(r *http.Request) (*http.Response, error) {
			cancel() // the run ends while the call is in flight
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		run := newRun(t, writeProfile(t, "http://api.test", petRoutes), rt)
		resp := run.Call(ctx, broker.Request{Method: "GET", Path: "/pets"})
		assert.Equal(t, http.StatusBadGateway, resp.Status)
		assert.Contains(t, string(resp.Body), "the run is ending")
	})
}

func TestForwardRedactsEchoedCredential(t *testing.T) {
	api := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get(credHeader)
		w.Header().Set("X-Echo", got)
		w.Header().Set("Location", "/login?token="+strings.TrimPrefix(got, credScheme+" "))
		w.Header().Add("Set-Cookie", "s="+secret+"; HttpOnly")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"bad key %s","again":"%s%s"}`, got, secret, secret)
	})
	run := newRun(t, writeProfile(t, api.URL, petRoutes), nil)
	raw := run.CallEnvelope(context.Background(), req(t, "GET", "/pets"))
	assert.NotContains(t, string(raw), secret)
	g := decodeEnvelope(t, raw)
	assert.Equal(t, http.StatusUnauthorized, g.Status)
	assert.Equal(t, `{"error":"bad key Key [redacted]","again":"[redacted][redacted]"}`, string(g.bytes(t)))
	assert.Equal(t, []string{"Key [redacted]"}, g.Headers["X-Echo"])
	assert.Equal(t, []string{"/login?token=[redacted]"}, g.Headers["Location"])
	assert.Equal(t, []string{"s=[redacted]; HttpOnly"}, g.Headers["Set-Cookie"])
	require.Len(t, api.requests(), 1, "the upstream did get the real credential")

	// Binary bodies are redacted too, byte for byte.
	api.setHandler(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(append([]byte{0xff, 0xfe}, []byte(secret)...))
	})
	g = get(t, run, "/pets")
	assert.Equal(t, append([]byte{0xff, 0xfe}, []byte(broker.Redacted)...), g.bytes(t))

	traceLines(t, run)
	var all strings.Builder
	require.NoError(t, broker.WriteTrace(&all, run.Trace()))
	assert.NotContains(t, all.String(), secret)
	assert.NotContains(t, string(run.Finish(broker.StatusOK, nil).Line()), secret)
}

func TestForwardUpstreamErrorsPassThrough(t *testing.T) {
	api := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		var code int
		_, _ = fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/pets/"), "%d", &code)
		w.WriteHeader(code)
	})
	run := newRun(t, writeProfile(t, api.URL, petRoutes), nil)
	for _, code := range []int{204, 304, 400, 404, 409, 500, 502, 504} {
		g := get(t, run, fmt.Sprintf("/pets/%d", code))
		assert.Equal(t, code, g.Status)
		assert.NotContains(t, g.Headers, OutcomeHeaderName)
	}
	c := run.Counters()
	assert.Equal(t, 8, c.Forwarded)
	assert.Zero(t, c.BreakerOpens, "only 503 and 429 open the breaker")
	// HEAD: no body, whatever Content-Length says.
	run2 := newRun(t, writeProfile(t, api.URL, "routes: [HEAD /pets/*]\n"), nil)
	g := call(t, run2, req(t, "HEAD", "/pets/200"))
	assert.Equal(t, 200, g.Status)
	assert.Equal(t, "", *g.Body)
}

func TestNewRunNeedsAProfile(t *testing.T) {
	_, err := broker.New(broker.Config{})
	assert.Error(t, err)
	r, err := broker.New(broker.Config{Profile: writeProfile(t, "http://a.test", petRoutes)})
	require.NoError(t, err)
	assert.Len(t, r.ID(), 16, "a random run id when none is given")
}

// TestForwardLargeBodies reads bodies past the first buffer, with and without Content-Length.
func TestForwardLargeBodies(t *testing.T) {
	big := make([]byte, 300<<10+7)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	api := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pets/sized" {
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
		}
		for off := 0; off < len(big); off += 10000 {
			_, _ = w.Write(big[off:min(off+10000, len(big))])
			w.(http.Flusher).Flush()
		}
	})
	run := newRun(t, writeProfile(t, api.URL, petRoutes), nil)
	for _, path := range []string{"/pets/sized", "/pets/chunked"} {
		g := get(t, run, path)
		require.Equal(t, http.StatusOK, g.Status, path)
		assert.Equal(t, big, g.bytes(t), path)
	}
}

// TestFailureReasonsAreRedacted: an upstream that answers garbage echoing the credential gets a
// failed call whose reason (from the HTTP client's error) names no secret.
func TestFailureReasonsAreRedacted(t *testing.T) {
	cases := map[string]struct {
		reply  func(cred string) string
		reason string
	}{
		"status line": {func(cred string) string { return "HTTP/1.1-" + cred + "\r\n\r\n" }, "malformed HTTP response"},
		"header line": {func(cred string) string { return "HTTP/1.1 200 OK\r\n" + cred + "\r\n\r\n" }, "malformed MIME header"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			api := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				rawReply(tc.reply(strings.TrimPrefix(r.Header.Get(credHeader), credScheme+" ")))(w, r)
			})
			run := newRun(t, writeProfile(t, api.URL, petRoutes), nil)
			raw := run.CallEnvelope(context.Background(), req(t, "GET", "/pets"))
			assert.NotContains(t, string(raw), secret)
			g := decodeEnvelope(t, raw)
			assert.Equal(t, http.StatusBadGateway, g.Status)
			reason := g.own(t).Reason
			assert.Contains(t, reason, tc.reason)
			assert.Contains(t, reason, broker.Redacted)
			var trace strings.Builder
			require.NoError(t, broker.WriteTrace(&trace, run.Trace()))
			assert.NotContains(t, trace.String(), secret)
		})
	}
}

// TestQuotedSecretIsRedacted: client errors quote what they saw (Go's %q), so a secret holding
// a quote or a backslash shows up escaped; that form is redacted too.
func TestQuotedSecretIsRedacted(t *testing.T) {
	const odd = `tok"en\with`
	api := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		rawReply("HTTP/1.1-"+r.Header.Get(credHeader)+"\r\n\r\n")(w, r)
	})
	run, err := broker.New(broker.Config{Profile: writeProfile(t, api.URL, petRoutes), Secret: profiles.NewSecret(odd)})
	require.NoError(t, err)
	raw := run.CallEnvelope(context.Background(), req(t, "GET", "/pets"))
	g := decodeEnvelope(t, raw)
	require.Equal(t, http.StatusBadGateway, g.Status)
	reason := g.own(t).Reason
	assert.NotContains(t, reason, odd)
	assert.NotContains(t, reason, `tok\"en\\with`)
	assert.Contains(t, reason, broker.Redacted)
	require.Len(t, api.requests(), 1)
	assert.Equal(t, credScheme+" "+odd, api.requests()[0].Header.Get(credHeader), "the credential itself is sent as is")
	a := run.Finish(broker.StatusError, fmt.Errorf("saw %q", odd))
	assert.NotContains(t, a.Error, `tok\"en\\with`)
}
