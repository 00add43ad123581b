package plimsoll

import (
	"encoding/json"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEncodeRequest(t *testing.T) {
	cases := []struct {
		name string
		req  Request
		want string
	}{
		{"minimal", Request{Method: "get", Path: "/items"}, `{"method":"GET","path":"/items"}`},
		{"query sorted, arrays in order, RFC 3986",
			Request{Method: "GET", Path: "/s", Query: url.Values{"tag": {"b", "a"}, "q": {"café & ☕ 1+1=2 !*'()~"}}},
			`{"method":"GET","path":"/s","query":"q=caf%C3%A9%20%26%20%E2%98%95%201%2B1%3D2%20%21%2A%27%28%29~&tag=b&tag=a"}`},
		{"raw query first, verbatim",
			Request{Method: "GET", Path: "/s", RawQuery: "z=1&z=2", Query: url.Values{"a": {"x y"}}},
			`{"method":"GET","path":"/s","query":"z=1&z=2&a=x%20y"}`},
		{"headers sorted; one value a string, several an array; empty dropped",
			Request{Method: "GET", Path: "/", Header: Header{"X-Tag": {"a", "b"}, "Accept": {"text/plain"}, "X-None": {}}},
			`{"method":"GET","path":"/","headers":{"Accept":"text/plain","X-Tag":["a","b"]}}`},
		{"text body with escapes and unicode",
			Request{Method: "POST", Path: "/t", Body: []byte("say \"hi\"\\\n\t\x01 <é> 𝄞")},
			`{"method":"POST","path":"/t","body":"say \"hi\"\\\n\t\u0001 <é> 𝄞"}`},
		{"empty body is present", Request{Method: "POST", Path: "/t", Body: []byte{}}, `{"method":"POST","path":"/t","body":""}`},
		{"binary body as base64", Request{Method: "PUT", Path: "/b", Body: []byte{0, 0xff, 0xfe, 'a'}},
			`{"method":"PUT","path":"/b","body_base64":"AP/+YQ=="}`},
		{"non-canonical path travels as given", Request{Method: "GET", Path: "/a/../b"}, `{"method":"GET","path":"/a/../b"}`},
		{"a '?' in the path splits off a query, which goes first",
			Request{Method: "GET", Path: "/s?x=1&y", RawQuery: "r=2", Query: url.Values{"q": {"3"}}},
			`{"method":"GET","path":"/s","query":"x=1&y&r=2&q=3"}`},
		{"an empty query after '?'", Request{Method: "GET", Path: "/s?"}, `{"method":"GET","path":"/s"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := encodeRequest(&c.req)
			assert.Equal(t, c.want, string(got))
			assert.True(t, json.Valid(got))
		})
	}
}

func TestEncodeRequestKeepsInvalidUTF8ForTheBroker(t *testing.T) {
	got := encodeRequest(&Request{Method: "GET", Path: "/a\xff"})
	assert.Equal(t, "{\"method\":\"GET\",\"path\":\"/a\xff\"}", string(got), "not repaired to U+FFFD: the broker refuses it")
}

func TestDecodeResponse(t *testing.T) {
	resp, err := decodeResponse([]byte(`{"status":200,"headers":{"content-type":["a"],"X-Multi":["1","2"]},"body":"héllo"}`))
	require.NoError(t, err)
	assert.Equal(t, 200, resp.Status)
	assert.Equal(t, "a", resp.Header.Get("Content-Type"))
	assert.Equal(t, []string{"1", "2"}, resp.Header.Values("x-multi"))
	assert.Equal(t, "héllo", resp.Text())

	resp, err = decodeResponse([]byte(`{"status":200,"headers":{},"body_base64":"AP8="}`))
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0xff}, resp.Body)

	for _, bad := range []string{`{`, `{"status":200,"body":"a","body_base64":"YQ=="}`, `{"status":200,"body_base64":"!"}`} {
		_, err := decodeResponse([]byte(bad))
		assert.ErrorIs(t, err, errEnvelope, bad)
	}
}

func TestOutcomeErrors(t *testing.T) {
	cases := []struct {
		outcome  Outcome
		status   int
		sentinel error
	}{
		{Shed, 503, ErrShed}, {Denied, 403, ErrDenied}, {OverBudget, 429, ErrOverBudget},
		{Invalid, 400, ErrInvalid}, {Failed, 502, ErrFailed}, {Failed, 504, ErrFailed},
	}
	for _, c := range cases {
		t.Run(string(c.outcome), func(t *testing.T) {
			resp := &Response{Status: c.status, Header: Header{"Plimsoll-Outcome": {string(c.outcome)}, "Retry-After": {"7"}},
				Body: []byte(`{"error":"` + string(c.outcome) + `","reason":"because"}`)}
			oe := outcomeOf(&Request{Method: "GET", Path: "/x"}, resp)
			require.NotNil(t, oe)
			var err error = oe
			assert.ErrorIs(t, err, c.sentinel)
			for _, other := range []error{ErrShed, ErrDenied, ErrOverBudget, ErrInvalid, ErrFailed} {
				if other != c.sentinel {
					assert.NotErrorIs(t, err, other)
				}
			}
			assert.Equal(t, "because", oe.Reason)
			assert.Equal(t, 7*time.Second, oe.RetryAfter)
			assert.Same(t, resp, oe.Response)
			assert.Contains(t, err.Error(), "GET /x: "+string(c.outcome))
		})
	}
	assert.Nil(t, outcomeOf(&Request{}, &Response{Status: 503, Header: Header{"Retry-After": {"30"}}}),
		"an upstream's own 503 is a response, not a shed")
}

func TestParseRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{"30": 30 * time.Second, "0": 0, "": 0, "-1": 0, "1.5": 0,
		"Wed, 21 Oct 2015 07:28:00 GMT": 0} {
		assert.Equal(t, want, parseRetryAfter(v), v)
	}
}

func TestCanonicalHeaderKey(t *testing.T) {
	for in, want := range map[string]string{"content-type": "Content-Type", "X-TAG": "X-Tag", "etag": "Etag",
		"bad name": "bad name", "x_y": "X_y"} {
		assert.Equal(t, want, CanonicalHeaderKey(in), in)
	}
}

func TestEncodeBody(t *testing.T) {
	b, ct, err := encodeBody(map[string]any{"b": "<&>", "a": 1})
	require.NoError(t, err)
	assert.Equal(t, `{"a":1,"b":"<&>"}`, string(b))
	assert.Equal(t, "application/json", ct)

	b, ct, err = encodeBody(json.RawMessage(`{"z":1,"a":2}`))
	require.NoError(t, err)
	assert.Equal(t, `{"z":1,"a":2}`, string(b), "a RawMessage is sent as it is")
	assert.Equal(t, "application/json", ct)

	_, _, err = encodeBody(json.RawMessage(`{`))
	assert.Error(t, err)
	_, _, err = encodeBody(func() {})
	assert.Error(t, err)

	b, ct, err = encodeBody("text")
	require.NoError(t, err)
	assert.Equal(t, "text", string(b))
	assert.Empty(t, ct)
}

func TestNoHost(t *testing.T) {
	_, err := Get("/x")
	assert.True(t, errors.Is(err, ErrNoHost), "%v", err)
}
