package host_test

// The security suite (issue 6): hostile guests and hostile inputs, end to end. Every case runs a
// real guest (JavaScript, or the Go test guest where raw bytes and pointers matter) in the real
// host.Runtime against a recording upstream on 127.0.0.1, and checks what the guest saw, what
// reached the upstream (nothing, for a refusal), the audit line and trace, that the credential
// shows up nowhere it should not, and that nothing is left running. SECURITY.md describes the
// threat model these cases stand for.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/guests/testguest"
	"github.com/plimsoll/plimsoll/host"
	"github.com/plimsoll/plimsoll/internal/testcache"
	"github.com/plimsoll/plimsoll/profiles"
)

// The classes of the suite, as SECURITY.md lists them.
const (
	paths     = "paths"
	headers   = "headers"
	envelope  = "envelope"
	methods   = "methods"
	upstream  = "upstream"
	resources = "resources"
	isolation = "isolation"
	audit     = "audit"
	responses = "responses" // issue 9, class 1
	encoding  = "encoding"  // issue 9, class 3
)

// secCase is one line of the suite.
type secCase struct {
	class string
	name  string
	js    string         // a JavaScript tool (the body of an async function), run after jsPrelude
	cmd   map[string]any // or a Go test guest command
	lim   lim            // profile limits for this case

	want   string          // what the guest saw: " | "-separated parts, in order (see guestView)
	calls  broker.Counters // the audit line's counters; the upstream must have received exactly
	status broker.Status   // Forwarded+Failed requests. status "" means ok
	err    string          // part of the run's error (and the audit's error); "" means none
	sent   string          // when set, the request target the upstream must have received

	tool   string                                            // the tool's name, when it matters
	cancel bool                                              // cancel the run once the upstream has the request
	hold   bool                                              // the upstream holds the request until the broker drops it
	check  func(t *testing.T, res host.Result, up *recorder) // anything else
}

// Counters of the common one-call outcomes.
var (
	none    = broker.Counters{}
	fwd1    = broker.Counters{HostCalls: 1, Forwarded: 1}
	invalid = broker.Counters{HostCalls: 1, Invalid: 1}
	denied  = broker.Counters{HostCalls: 1, Denied: 1}
	failed  = broker.Counters{HostCalls: 1, Failed: 1}
)

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// get is a tool that GETs path through the preamble and shows the answer.
func get(path string) string { return fmt.Sprintf(`return show(await api.get(%s));`, jsString(path)) }

// getH is get with headers, given as a JavaScript object literal.
func getH(path, headers string) string {
	return fmt.Sprintf(`return show(await api.get(%s, {headers: %s}));`, jsString(path), headers)
}

// rawJS is a tool that sends text as the request envelope, bypassing the preamble.
func rawJS(text string) string { return fmt.Sprintf(`return show(await raw(%s));`, jsString(text)) }

// goCall is a Go guest command that sends envelope once and prints the response envelope.
func goCall(envelope string) map[string]any {
	return map[string]any{"op": "call", "n": 1, "envelope": envelope, "cap": 1 << 16, "print": true}
}

// goCallBytes sends an envelope that JSON text cannot carry (invalid UTF-8).
func goCallBytes(envelope []byte) map[string]any {
	return map[string]any{"op": "call", "n": 1, "envelope_base64": base64.StdEncoding.EncodeToString(envelope),
		"cap": 1 << 16, "print": true}
}

// goRaw calls host_call with exact i32 arguments; -1 as a pointer is the guest's own buffer.
func goRaw(args ...int64) map[string]any { return map[string]any{"op": "raw", "args": args} }

// retryAfterTwice calls an upstream that answers 503 with a Retry-After, twice, and shows both.
func retryAfterTwice(name string) string {
	return fmt.Sprintf(`
		const show2 = (r) => r.status + " " + r.outcome + " [" + r.headers["retry-after"] + "]";
		const a = await api.get("/fault/retry-after-%[1]s");
		const b = await api.get("/fault/retry-after-%[1]s");
		return show2(a) + " then " + show2(b);`, name)
}

// secTables are the suite's tables, one per class (one file each: security_<class>_test.go).
// Isolation's cases need several runs each and live in security_isolation_test.go.
func secTables() map[string][]secCase {
	return map[string][]secCase{paths: pathCases, headers: headerCases, envelope: envelopeCases,
		methods: methodCases, upstream: upstreamCases, resources: resourceCases, audit: auditCases,
		responses: responseCases, encoding: encodingCases}
}

// runSecCases runs one class's table on one runtime.
func runSecCases(t *testing.T, cases []secCase) {
	rt := newSecRuntime(t, host.Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runSecCase(t, rt, c) })
	}
}

// TestSecuritySuite checks the suite's shape: every class has several cases, each filed under
// its own class.
func TestSecuritySuite(t *testing.T) {
	perClass, total := map[string]int{}, 0
	for class, cases := range secTables() {
		for _, c := range cases {
			require.Equal(t, class, c.class, "case %q is filed under the wrong class", c.name)
			perClass[c.class]++
			total++
		}
	}
	for _, class := range []string{paths, headers, envelope, methods, upstream, resources, audit, responses, encoding} {
		require.GreaterOrEqual(t, perClass[class], 3, "class %s needs several cases", class)
	}
	require.GreaterOrEqual(t, total, 60)
	t.Logf("cases per class: %v (isolation: TestSecurityIsolation)", perClass)
}

func runSecCase(t *testing.T, rt *host.Runtime, c secCase) {
	base := runtime.NumGoroutine()
	up, other := newRecorder(t), newRecorder(t)
	up.other = other.URL()
	p := secProfile(t, up.URL(), c.lim)

	var tool host.Tool
	var input []byte
	switch {
	case c.cmd != nil:
		tool, input = goGuest(), guestCmd(c.cmd)
	default:
		name := c.tool
		if name == "" {
			name = "case.js"
		}
		tool = host.JSTool(name, jsPrelude+c.js)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if c.cancel {
		go func() {
			select {
			case <-up.received:
				cancel()
			case <-ctx.Done():
			}
		}()
	}

	res := rt.Run(ctx, tool, p, input)

	if c.hold {
		// The in-flight request must have been canceled: the upstream's handler ends only then,
		// and closing the server waits for its handlers.
		waitClosed(t, up.canceled)
	}
	up.Close()
	other.Close()

	// The run's status and error.
	wantStatus := c.status
	if wantStatus == "" {
		wantStatus = broker.StatusOK
	}
	require.Equal(t, wantStatus, res.Audit.Status, "error: %v\nlog:\n%s", res.Err, res.Log)
	if c.err == "" {
		require.NoError(t, res.Err, "log:\n%s", res.Log)
	} else {
		require.Error(t, res.Err)
		require.Contains(t, res.Err.Error(), c.err)
		require.Equal(t, res.Err.Error(), res.Audit.Error)
	}

	// What the guest saw.
	if c.want != "" {
		requireWant(t, c.want, guestView(res.Output, c.cmd != nil))
	}

	// The audit line and the trace.
	require.Equal(t, c.calls, res.Audit.Counters)
	require.Equal(t, "sec", res.Audit.Profile)
	require.Equal(t, tool.Name, res.Audit.Tool)
	requireAuditAndTrace(t, res)

	// What reached the upstream: nothing for a refusal; for a forwarded call, exactly what was
	// matched, on base_url's host, with the credential once and nothing the guest may not set.
	reqs := up.requests()
	require.Len(t, reqs, c.calls.Forwarded+c.calls.Failed, "requests that reached the upstream")
	if len(reqs) == 0 {
		require.Zero(t, up.dials.Load(), "connections to the upstream")
		require.Zero(t, up.bytesIn.Load(), "bytes sent to the upstream")
	} else {
		require.LessOrEqual(t, up.dials.Load(), int64(len(reqs)), "one connection at most per request")
	}
	require.Zero(t, other.dials.Load(), "connections to the redirect target")
	upHost := strings.TrimPrefix(up.URL(), "http://")
	for _, r := range reqs {
		require.Equal(t, upHost, r.Host)
		require.Equal(t, []string{secCredValue}, r.Header.Values(secCredHeader))
		for _, name := range []string{"Authorization", "Proxy-Authorization", "Cookie", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host"} {
			require.Empty(t, r.Header.Values(name), name)
		}
	}
	if c.sent != "" {
		require.NotEmpty(t, reqs)
		require.Equal(t, c.sent, reqs[0].RequestURI)
	}

	requireNoCredential(t, res)
	if c.check != nil {
		c.check(t, res, up)
	}
	requireGoroutinesBack(t, base)
}

// waitRequests waits until the upstream has received n requests. The bound only turns a hang
// into a failure.
func waitRequests(t *testing.T, up *recorder, n int) {
	t.Helper()
	for i := 0; i < 60000 && len(up.requests()) < n; i++ {
		time.Sleep(time.Millisecond)
	}
	require.GreaterOrEqual(t, len(up.requests()), n, "requests the upstream received")
}

// waitClosed waits for ch to close. The bound is far above any run deadline in the suite: it
// only turns a hang into a failure.
func waitClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	for i := 0; i < 30000; i++ {
		select {
		case <-ch:
			return
		default:
			time.Sleep(time.Millisecond)
		}
	}
	t.Fatal("the in-flight request was never canceled")
}

// secSecret is the suite's credential. Every dash-separated part starts with a digit and the
// letters are lower case, so it survives http.CanonicalHeaderKey unchanged: an upstream that
// echoes it inside a header name cannot hide it by accident.
const secSecret = "0d15ea5e-0c0ffee-5ec7e7-9f00d"

const (
	secEnv        = "SEC_TOKEN"
	secCredHeader = "X-Api-Key"
	secCredValue  = "Token " + secSecret
)

func secGetenv(k string) string {
	if k == secEnv {
		return secSecret
	}
	return ""
}

// secCacheDir is the compilation cache shared by every test package (see cmd/plimsoll-run).
func secCacheDir() string { return testcache.Dir() }

// newSecRuntime builds a Runtime for the suite and closes it when the test ends. The broker's
// clock ticks 1 ms per reading, so a breaker window of 1 s outlasts the few calls of a case
// however loaded the machine is; run deadlines and call timeouts stay on the real clock.
func newSecRuntime(t *testing.T, opts host.Options) *host.Runtime {
	t.Helper()
	opts.CacheDir = secCacheDir()
	opts.Getenv = secGetenv
	start, ticks := time.Now(), atomic.Int64{}
	opts.Now = func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
	rt, err := host.New(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(context.Background())) })
	return rt
}

// seenRequest is one request as it reached an upstream.
type seenRequest struct {
	Method     string
	RequestURI string
	Host       string
	Header     http.Header
	Body       []byte
}

// recorder is a loopback upstream that counts every connection made to it and every byte it
// read, and records every request it parsed. Its handler serves the suite's routes under /v1;
// the faults that net/http cannot produce (lying lengths, resets, trickled headers) hijack the
// connection and write raw bytes.
type recorder struct {
	t   *testing.T
	srv *httptest.Server

	dials   atomic.Int64
	bytesIn atomic.Int64

	mu   sync.Mutex
	reqs []seenRequest

	other    string        // another upstream's URL, the target of off-host redirects
	received chan struct{} // a signal per request (dropped when one is waiting)
	canceled chan struct{} // closed when a /fault/hold request sees its context end
	holdOnce sync.Once
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	u := &recorder{t: t, received: make(chan struct{}, 1), canceled: make(chan struct{})}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(u.serve))
	u.srv.Listener = &countingListener{Listener: u.srv.Listener, u: u}
	u.srv.Start()
	return u
}

func (u *recorder) URL() string { return u.srv.URL }

// Close shuts the upstream down and waits for its handlers.
func (u *recorder) Close() { u.srv.Close() }

func (u *recorder) requests() []seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seenRequest(nil), u.reqs...)
}

type countingListener struct {
	net.Listener
	u *recorder
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.u.dials.Add(1)
	return &countingConn{Conn: c, u: l.u}, nil
}

type countingConn struct {
	net.Conn
	u *recorder
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.u.bytesIn.Add(int64(n))
	return n, err
}

func (u *recorder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	u.mu.Lock()
	u.reqs = append(u.reqs, seenRequest{Method: r.Method, RequestURI: r.RequestURI, Host: r.Host,
		Header: r.Header.Clone(), Body: body})
	u.mu.Unlock()
	select {
	case u.received <- struct{}{}:
	default:
	}
	path := strings.TrimPrefix(r.URL.EscapedPath(), "/v1")
	if name, ok := strings.CutPrefix(path, "/fault/"); ok {
		u.fault(name, w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "ok %s %s", r.Method, r.RequestURI)
}

// fault serves /v1/fault/<name>.
func (u *recorder) fault(name string, w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	switch name {
	case "redirect-host":
		http.Redirect(w, r, u.other+"/v1/pets/1", http.StatusFound)
	case "redirect-scheme":
		http.Redirect(w, r, "https://"+strings.TrimPrefix(u.other, "http://")+"/v1/pets/1", http.StatusTemporaryRedirect)
	case "redirect-port":
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(u.other, "http://"))
		http.Redirect(w, r, "http://localhost:"+port+"/v1/pets/1", http.StatusMovedPermanently)
	case "redirect-path":
		http.Redirect(w, r, "/v1/pets/1", http.StatusSeeOther)
	case "big-honest":
		h.Set("Content-Length", fmt.Sprint(secMaxResponse+1))
		w.Write(bytes.Repeat([]byte("a"), secMaxResponse+1))
	case "big-chunked":
		w.Write(bytes.Repeat([]byte("a"), 4096))
		w.(http.Flusher).Flush()
		w.Write(bytes.Repeat([]byte("a"), secMaxResponse))
	case "endless-chunked":
		chunk := bytes.Repeat([]byte("z"), 4096)
		for {
			if _, err := w.Write(chunk); err != nil {
				return // the broker hung up
			}
			w.(http.Flusher).Flush()
		}
	case "big-close-delimited":
		// HTTP/1.0 style: no length, no chunking, the end of the body is the end of the connection.
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n")
			c.Write(bytes.Repeat([]byte("b"), secMaxResponse+1))
		})
	case "lying-short":
		// Content-Length claims 10 bytes; a megabyte follows.
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Type: text/plain\r\n\r\n")
			c.Write(bytes.Repeat([]byte("L"), 1<<20))
		})
	case "lying-long":
		// Content-Length claims more than arrives before the connection closes.
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\nonly this")
		})
	case "lying-huge":
		// Content-Length claims far more than the cap; a few bytes follow.
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 9000000000\r\n\r\nsmall")
		})
	case "trickle":
		// Response headers one byte at a time, never finished.
		u.raw(w, func(c net.Conn) {
			head := "HTTP/1.1 200 OK\r\nX-Slow: "
			for i := 0; ; i++ {
				b := "a"
				if i < len(head) {
					b = head[i : i+1]
				}
				if _, err := io.WriteString(c, b); err != nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	case "silent":
		// Reads the request and never answers.
		u.raw(w, func(c net.Conn) { io.Copy(io.Discard, c) })
	case "huge-headers":
		for i := range 100 {
			h.Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("p", 1000))
		}
		io.WriteString(w, "never seen")
	case "reset-before":
		u.raw(w, func(c net.Conn) { reset(c) })
	case "reset-mid-body":
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n")
			c.Write(bytes.Repeat([]byte("m"), 1000))
			reset(c)
		})
	case "eof-before":
		u.raw(w, func(c net.Conn) {})
	case "garbage":
		u.raw(w, func(c net.Conn) { io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n\r\n") })
	case "html":
		h.Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>Gateway says no {not json</body></html>")
	case "binary":
		h.Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0xff, 0xfe, 0x00, 0x01, 0xc0, 0xae, 0x80, '"', '\\', '\n'})
	case "gzip-bomb":
		h.Set("Content-Encoding", "gzip")
		h.Set("Content-Type", "application/json")
		w.Write(gzipBomb())
	case "echo":
		// Every way an upstream can hand a credential back.
		cred := r.Header.Get(secCredHeader)
		h.Set("X-Echo", cred)
		h.Set("Set-Cookie", "session="+cred)
		h.Set("Location", "http://127.0.0.1/?k="+cred)
		h.Set("X-"+strings.TrimPrefix(cred, "Token "), "in the name")
		fmt.Fprintf(w, "you sent %s; again: %s", cred, cred)
	case "echo-binary":
		cred := r.Header.Get(secCredHeader)
		w.Write(append([]byte{0xff, 0x00}, cred...))
	case "echo-malformed":
		// A broken header line that carries the credential: the transport's error quotes it.
		cred := r.Header.Get(secCredHeader)
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Broken "+cred+"\r\n\r\n")
		})
	case "ansi-malformed":
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Broken \x1b[2J\x1b[31mFAKE {\"run_id\":\"x\"}\r\n\r\n")
		})
	case "claims-outcome":
		h.Set(broker.OutcomeHeader, "denied")
		h.Set("Connection", "X-Hop")
		h.Set("X-Hop", "connection-specific")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("Proxy-Authenticate", "Basic")
		io.WriteString(w, "upstream body")
	case "switching-protocols":
		// 101 then the raw connection, held open and dripping: no deadline covers it.
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			drip(c, "x")
		})
	case "switching-protocols-bare":
		// 101 without Upgrade: the transport reads it as a final answer with no body.
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\n\r\n")
			drip(c, "x")
		})
	case "continue-then-ok":
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		})
	case "early-hints-flood":
		u.raw(w, func(c net.Conn) {
			for { // until the broker hangs up
				if _, err := io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"); err != nil {
					return
				}
			}
		})
	case "early-hints-echo":
		// The credential in an informational answer's headers, then a final answer.
		cred := r.Header.Get(secCredHeader)
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nX-Echo: "+cred+"\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfine")
		})
	case "drip-body":
		// Honest headers, then one body byte every few milliseconds, never finishing.
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
			drip(c, "d")
		})
	case "drip-chunked":
		u.raw(w, func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
			drip(c, "1\r\nc\r\n")
		})
	case "trailer-echo":
		// The credential in a trailer: the transport keeps trailers apart, and they never reach
		// the guest.
		cred := r.Header.Get(secCredHeader)
		h.Set("Trailer", "X-Echo")
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		h.Set("X-Echo", cred)
	case "gzip-anyway":
		// Compresses an echo of the credential although the broker asked for identity.
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		io.WriteString(zw, "you sent "+r.Header.Get(secCredHeader))
		zw.Close()
		h.Set("Content-Encoding", "gzip")
		w.Write(buf.Bytes())
	case "br-anyway":
		h.Set("Content-Encoding", "br")
		io.WriteString(w, "\x1b\x03\x00not really brotli")
	case "identity-declared":
		h.Set("Content-Encoding", "identity")
		io.WriteString(w, "plain")
	case "gzip-empty":
		h.Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusNoContent)
	case "partial-unasked":
		h.Set("Content-Range", "bytes 0-3/10")
		w.WriteHeader(http.StatusPartialContent)
		io.WriteString(w, "part")
	case "hold":
		// Holds the request until the broker gives up on it, and says so.
		<-r.Context().Done()
		u.holdOnce.Do(func() { close(u.canceled) })
	default:
		if ra, ok := strings.CutPrefix(name, "retry-after-"); ok {
			h["Retry-After"] = []string{retryAfterValues[ra]}
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "overloaded")
			return
		}
		http.NotFound(w, r)
	}
}

// retryAfterValues are the Retry-After values the upstream sends, by name.
var retryAfterValues = map[string]string{
	"negative": "-5", "fraction": "1.5", "junk": "120junk", "huge": "99999999999",
	"past-date": "Wed, 21 Oct 2015 07:28:00 GMT", "empty": "",
}

// raw hijacks the connection, runs write on it, and closes it.
func (u *recorder) raw(w http.ResponseWriter, write func(net.Conn)) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		u.t.Errorf("hijack: %v", err)
		return
	}
	defer c.Close()
	write(c)
}

// drip writes unit to c every few milliseconds until the peer hangs up: an upstream that never
// finishes. The pause is the upstream's pace, not a wait for a state.
func drip(c net.Conn, unit string) {
	for {
		if _, err := io.WriteString(c, unit); err != nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reset closes c with an RST rather than a FIN.
func reset(c net.Conn) {
	if cc, ok := c.(*countingConn); ok {
		c = cc.Conn
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// gzipBomb is a small gzip stream (about 16 KiB) that inflates to 16 MiB of zeros.
var gzipBomb = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for range 16 {
		zw.Write(zero)
	}
	zw.Close()
	return buf.Bytes()
})

// secMaxResponse is the suite profile's limits.max_response_bytes.
const secMaxResponse = 64 << 10

// secProfileYAML is the suite's grant. Cases add limits; %s is the upstream's URL.
const secProfileYAML = `base_url: %s/v1
credential:
  header: X-Api-Key
  scheme: Token
  env: SEC_TOKEN
routes:
  - GET /pets
  - GET /pets/*
  - POST /pets
  - GET /pets/*/toys
  - GET /fault/*
%sbudget:
  calls: %d
limits:
%s`

// lim is a case's profile limits, by field name; "budget" sets budget.calls, "request_headers"
// and "health_check" set those fields (YAML flow values).
type lim map[string]string

// secProfile writes and loads the suite's profile for the upstream at base.
func secProfile(t *testing.T, base string, l lim) *profiles.Profile {
	t.Helper()
	// Deadlines no case reaches unless it means to: a case that ends at a limit or an error must
	// not turn into a timeout on a loaded machine. Cases about deadlines set their own.
	fields := map[string]string{"run_timeout": "2m", "call_timeout": "1m",
		"max_response_bytes": fmt.Sprint(secMaxResponse)}
	budget, top := "100", ""
	for k, v := range l {
		switch k {
		case "budget":
			budget = v
		case "request_headers", "health_check":
			top += k + ": " + v + "\n"
		default:
			fields[k] = v
		}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var limits strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&limits, "  %s: %s\n", k, fields[k])
	}
	var n int
	fmt.Sscan(budget, &n)
	path := filepath.Join(t.TempDir(), "sec.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(secProfileYAML, base, top, n, limits.String())), 0o600))
	p, err := profiles.LoadFile(path)
	require.NoError(t, err)
	return p
}

// jsPrelude runs before every JavaScript case. It gives the case:
//   - raw(text): send text as the request envelope, byte for byte, bypassing the preamble's
//     envelope builder (a hostile tool can do the same: the preamble looks JSON.stringify up
//     at call time);
//   - show(r): "STATUS OUTCOME REASON" for the broker's own answers, "STATUS forwarded BODY"
//     otherwise;
//   - a log line "seen <envelope>" for every response envelope the guest receives, so the
//     credential checks cover everything the guest could see.
const jsPrelude = `
const __stringify = JSON.stringify, __parse = JSON.parse;
JSON.parse = function (text) {
  if (typeof text === "string" && text.startsWith('{"status"')) console.error("seen " + text);
  return __parse.apply(JSON, arguments);
};
function raw(text) {
  JSON.stringify = function () { JSON.stringify = __stringify; return text; };
  return api.get("/");
}
function show(r) {
  if (r.outcome === "forwarded") return r.status + " forwarded " + r.body;
  return r.status + " " + r.outcome + " " + __parse(r.body).reason;
}
`

// goGuest is the Go test guest (see guests/testguest/guest).
func goGuest() host.Tool { return host.WasmTool("testguest", testguest.Wasm()) }

// envelopeShape is the part of a response envelope the suite reads.
type envelopeShape struct {
	Status     int                 `json:"status"`
	Headers    map[string][]string `json:"headers"`
	Body       *string             `json:"body"`
	BodyBase64 *string             `json:"body_base64"`
}

// guestView is what the guest saw, as text: a JS tool's result (a JSON string is unquoted), or
// the Go guest's output with each response envelope shown as show() would.
func guestView(out []byte, isGo bool) string {
	if !isGo {
		var s string
		if json.Unmarshal(out, &s) == nil {
			return s
		}
		return string(out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		var env envelopeShape
		if err := json.Unmarshal([]byte(l), &env); err != nil || env.Status == 0 {
			lines = append(lines, l)
			continue
		}
		outcome := "forwarded"
		if v := env.Headers[broker.OutcomeHeader]; len(v) > 0 {
			outcome = v[0]
		}
		body := ""
		if env.Body != nil {
			body = *env.Body
		}
		if outcome != "forwarded" {
			var own struct{ Reason string }
			json.Unmarshal([]byte(body), &own)
			body = own.Reason
		}
		lines = append(lines, fmt.Sprintf("%d %s %s", env.Status, outcome, body))
	}
	return strings.Join(lines, "\n")
}

// requireWant checks that got holds each " | "-separated part of want, in order.
func requireWant(t *testing.T, want, got string) {
	t.Helper()
	rest := got
	for _, part := range strings.Split(want, " | ") {
		i := strings.Index(rest, part)
		require.True(t, i >= 0, "the guest saw:\n%s\nwant, in order: %q (missing %q)", got, want, part)
		rest = rest[i+len(part):]
	}
}

// requireOneJSONLine checks that b is exactly one line of valid JSON, newline-terminated.
func requireOneJSONLine(t *testing.T, what string, b []byte) {
	t.Helper()
	require.True(t, bytes.HasSuffix(b, []byte("\n")), "%s does not end with a newline: %q", what, b)
	require.Equal(t, 1, bytes.Count(b, []byte("\n")), "%s is not one line: %q", what, b)
	require.True(t, json.Valid(b), "%s is not valid JSON: %q", what, b)
	require.False(t, bytes.ContainsAny(b, "\r\x1b\x00"), "%s holds a raw control character: %q", what, b)
}

// hasControl reports C0 controls and DEL, the bytes that can forge lines or drive a terminal.
func hasControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 }) >= 0
}

// requireAuditAndTrace checks the run's record: exactly one valid audit line that decodes back
// to the audit, and a trace of one valid JSON line per call whose outcomes add up to the
// counters and whose fields hold no raw control characters.
func requireAuditAndTrace(t *testing.T, res host.Result) {
	t.Helper()
	line := res.Audit.Line()
	requireOneJSONLine(t, "the audit line", line)
	var back broker.Audit
	require.NoError(t, json.Unmarshal(line, &back))
	require.Equal(t, res.Audit, back)
	require.NotEmpty(t, res.Audit.RunID)

	var buf bytes.Buffer
	require.NoError(t, broker.WriteTrace(&buf, res.Trace))
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		requireOneJSONLine(t, "a trace line", append(sc.Bytes(), '\n'))
	}
	require.Equal(t, len(res.Trace), lines)
	require.Equal(t, res.Audit.HostCalls, len(res.Trace), "one trace entry per host call")
	tally := broker.Counters{HostCalls: len(res.Trace), Probes: res.Audit.Probes, ProbesOK: res.Audit.ProbesOK,
		BreakerOpens: res.Audit.BreakerOpens}
	for i, e := range res.Trace {
		require.Equal(t, i+1, e.Seq)
		for field, v := range map[string]string{"method": e.Method, "path": e.Path, "reason": e.Reason, "route": e.Route} {
			require.False(t, hasControl(v), "trace entry %d: %s holds a raw control character: %q", e.Seq, field, v)
		}
		switch e.Outcome {
		case broker.Forwarded:
			tally.Forwarded++
		case broker.Shed:
			tally.Shed++
		case broker.Denied:
			tally.Denied++
		case broker.OverBudget:
			tally.OverBudget++
		case broker.Invalid:
			tally.Invalid++
		case broker.Failed:
			tally.Failed++
		}
	}
	require.Equal(t, res.Audit.Counters, tally, "the trace's outcomes add up to the audit's counters")
}

// requireNoCredential checks that the credential is nowhere the guest, the trace, the audit
// line or the log can show.
func requireNoCredential(t *testing.T, res host.Result) {
	t.Helper()
	trace, err := json.Marshal(res.Trace)
	require.NoError(t, err)
	places := map[string]string{"output": string(res.Output), "log": string(res.Log), "trace": string(trace),
		"audit": string(res.Audit.Line())}
	if res.Err != nil {
		places["error"] = res.Err.Error()
	}
	for where, text := range places {
		for _, form := range []string{secSecret, strings.ToLower(secSecret), strings.ToUpper(secSecret)} {
			require.NotContains(t, text, form, "the credential leaked into the %s", where)
		}
	}
}

// requireGoroutinesBack waits for goroutines a finished run leaves behind to exit (wazero's
// context watcher, the transport's connection loops once the upstream closed them). It polls; it
// asserts nothing about time, only that the count comes back.
func requireGoroutinesBack(t *testing.T, base int) {
	t.Helper()
	for i := 0; i < 5000 && runtime.NumGoroutine() > base; i++ {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines left running, want at most %d:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// guestCmd encodes a Go test guest command.
func guestCmd(fields map[string]any) []byte {
	b, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	return b
}
