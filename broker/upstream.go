package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/plimsoll/plimsoll/breaker"
	"github.com/plimsoll/plimsoll/profiles"
)

// sharedTransport is the default upstream transport. It ignores proxy settings from the
// environment, never decompresses on the guest's behalf, and caps response headers.
var sharedTransport = &http.Transport{
	Proxy:                  nil,
	DisableCompression:     true,
	MaxResponseHeaderBytes: 64 << 10,
	MaxIdleConnsPerHost:    16,
	IdleConnTimeout:        90 * time.Second,
	ForceAttemptHTTP2:      true,
}

// identity is the Accept-Encoding the broker sends on every upstream request, whatever the
// transport: the guest sees bodies as sent, and redaction sees what the guest sees.
var identity = []string{"identity"}

var (
	errBodyTooLarge = errors.New("body over the cap")
	// errNotFinal is a 1xx answer the transport hands over as if it were final (101 Switching
	// Protocols): its body is the raw connection, so the call would never end.
	errNotFinal = errors.New("not a final response")
	// errEncoded is a body in a Content-Encoding the broker did not ask for.
	errEncoded = errors.New("encoded body")
)

// roundTrip sends req and returns a response whose every body read ends when ctx does: net/http's
// own transport sees to it, and on any other the body is closed at ctx's end. A 1xx is closed at
// once (a 101's body is the raw connection, which no deadline covers). stop must be called once
// the body is read.
func (r *Broker) roundTrip(ctx context.Context, req *http.Request) (resp *http.Response, stop func(), err error) {
	resp, err = r.transport.RoundTrip(req)
	if err != nil {
		return nil, nil, err
	}
	if resp.Body == nil {
		resp.Body = http.NoBody // a RoundTripper must set one; a hand-written one may not
	}
	body := resp.Body
	if _, std := r.transport.(*http.Transport); std {
		// net/http's own transport ends body reads at ctx's end (NewRequestWithContext's
		// contract); any other is made to, by closing the body then.
		stop = func() { body.Close() }
	} else {
		after := context.AfterFunc(ctx, func() { body.Close() })
		stop = func() { after(); body.Close() }
	}
	if resp.StatusCode < 200 {
		stop()
		return resp, func() {}, errNotFinal
	}
	return resp, stop, nil
}

// probe sends GET health_check with the run's credential. It is never traced or budgeted.
func (r *Broker) probe(ctx context.Context) (status int, ok bool) {
	started := r.now()
	ctx, cancel := context.WithTimeout(ctx, breaker.ProbeTimeout)
	defer cancel()
	req, err := r.newUpstreamRequest(ctx, http.MethodGet, r.profile.HealthCheck.Pattern, "", nil, nil)
	if err == nil {
		var resp *http.Response
		var stop func()
		if resp, stop, err = r.roundTrip(ctx, req); resp != nil {
			status = resp.StatusCode
		}
		if err == nil {
			drain(resp)
			stop()
		}
	}
	healthy := status >= 200 && status < 300
	ok = r.recordProbe(started, status)
	r.mu.Lock()
	r.counters.Probes++
	if healthy {
		r.counters.ProbesOK++
	}
	r.mu.Unlock()
	return status, ok
}

// forward sends the call upstream with the credential injected and records what came back.
func (r *Broker) forward(runCtx context.Context, req Request, entry TraceEntry, t0 time.Time) Response {
	ctx, cancel := context.WithTimeout(runCtx, r.profile.Limits.CallTimeout)
	defer cancel()
	up, err := r.newUpstreamRequest(ctx, req.Method, req.Path, req.Query, req.Headers, req.Body)
	if err != nil {
		return r.fail(entry, http.StatusBadGateway, "cannot build upstream request: "+err.Error(), t0)
	}
	if r.traceParent != nil {
		up.Header["Traceparent"] = r.traceParent // the run's, whatever the tool set
	}
	resp, stop, err := r.roundTrip(ctx, up)
	if errors.Is(err, errNotFinal) {
		entry.UpstreamStatus = resp.StatusCode
		return r.fail(entry, http.StatusBadGateway, fmt.Sprintf("upstream answered %d %s, not a final response", resp.StatusCode, http.StatusText(resp.StatusCode)), t0)
	}
	if err != nil {
		return r.failFromError(runCtx, ctx, entry, err, t0)
	}
	// The status alone says whether the API is overloaded, even if its body then fails to arrive.
	r.recordReply(resp)
	entry.UpstreamStatus = resp.StatusCode
	body, err := readBody(resp, r.profile.Limits.MaxResponseBytes)
	stop()
	if err != nil {
		return r.failRead(runCtx, ctx, entry, resp, err, t0)
	}
	h := resp.Header // ours alone: stripped and redacted in place
	stripHopByHop(h)
	delete(h, OutcomeHeader) // it marks the broker's own answers: an upstream may not claim one
	out := Response{Status: resp.StatusCode, Headers: r.redactHeaders(h), Body: r.redactBody(body)}
	return r.answer(entry, out, Forwarded, "", t0)
}

// readBody reads the whole body under the cap, and refuses one the broker cannot redact.
func readBody(resp *http.Response, max int64) ([]byte, error) {
	body, err := readCapped(resp, max)
	if err == nil && len(body) > 0 && encoded(resp.Header) != "" {
		return nil, errEncoded
	}
	return body, err
}

// encoded returns the response's Content-Encoding when it is anything but identity.
func encoded(h http.Header) string {
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return c
			}
		}
	}
	return ""
}

func (r *Broker) failRead(runCtx, ctx context.Context, entry TraceEntry, resp *http.Response, err error, t0 time.Time) Response {
	switch {
	case errors.Is(err, errBodyTooLarge):
		return r.fail(entry, http.StatusBadGateway, fmt.Sprintf("upstream body is over limits.max_response_bytes (%s)", profiles.FormatSize(r.profile.Limits.MaxResponseBytes)), t0)
	case errors.Is(err, errEncoded):
		return r.fail(entry, http.StatusBadGateway, fmt.Sprintf("upstream sent Content-Encoding %s, which the broker did not ask for: it asks for identity, so that what the tool sees can be redacted", quote(encoded(resp.Header))), t0)
	}
	return r.failFromError(runCtx, ctx, entry, err, t0)
}

func (r *Broker) failFromError(runCtx, callCtx context.Context, entry TraceEntry, err error, t0 time.Time) Response {
	if runCtx.Err() != nil {
		return r.fail(entry, http.StatusBadGateway, "call canceled: the run is ending", t0)
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return r.fail(entry, http.StatusGatewayTimeout, fmt.Sprintf("upstream did not answer within limits.call_timeout (%s)", r.profile.Limits.CallTimeout), t0)
	}
	return r.fail(entry, http.StatusBadGateway, "upstream gave no usable response: "+r.redactString(upstreamErr(err)), t0)
}

func (r *Broker) fail(entry TraceEntry, status int, reason string, t0 time.Time) Response {
	return r.answer(entry, ownAnswer(status, Failed, reason, nil), Failed, reason, t0)
}

// upstreamErr strips the URL wrapper: the reason names the failure, the trace names the path.
func upstreamErr(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}

func (r *Broker) newUpstreamRequest(ctx context.Context, method, path, query string, h http.Header, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, "", nil)
	if err != nil {
		return nil, err
	}
	base := r.profile.BaseURL
	u := req.URL
	*u = *base
	u.Opaque = base.Path + path // sent byte for byte: the canonical path that was matched
	u.Path, u.RawPath, u.RawQuery = "", "", query
	req.Host = base.Host
	// A fresh map, so the credential never lands in the caller's; the value slices are shared,
	// as neither the broker nor the transport writes to them.
	for name, vals := range h {
		req.Header[name] = vals
	}
	req.Header["Accept-Encoding"] = identity // set, so no transport negotiates gzip on its own
	if r.credValue != nil {
		req.Header[r.credHeader] = r.credValue
	}
	if len(body) > 0 {
		req.Body = bodyReader(body)
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return bodyReader(body), nil }
	}
	return req, nil
}

func bodyReader(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// readCapped reads at most max bytes of the body; one byte more is an error, whatever
// Content-Length claimed. A declared length only sizes the first buffer (one byte over, to see
// the end without growing), up to 64 KiB so that a claim alone cannot make the broker allocate
// much; it is never trusted as the end.
func readCapped(resp *http.Response, max int64) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength > max {
		return nil, errBodyTooLarge
	}
	size := int64(512)
	if resp.ContentLength >= 0 {
		size = min(resp.ContentLength+1, 64<<10)
	}
	b := make([]byte, 0, size)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow as io.ReadAll does
		}
		room := b[len(b):cap(b)]
		if left := max + 1 - int64(len(b)); int64(len(room)) > left {
			room = room[:left] // never read past one byte over the cap
		}
		n, err := resp.Body.Read(room)
		b = b[:len(b)+n]
		if err == io.EOF || int64(len(b)) > max {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(b)) > max {
		return nil, errBodyTooLarge
	}
	return b, nil
}

// drain discards a probe's body so the connection can be reused, without reading much.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
