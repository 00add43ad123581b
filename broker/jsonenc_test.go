package broker

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// byEncodingJSON is the envelope as encoding/json writes it: the reference the hand-written
// encoder must match byte for byte.
func byEncodingJSON(t testing.TB, resp Response, key, body string) []byte {
	h := resp.Headers
	if h == nil {
		h = http.Header{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(map[string]any{"status": resp.Status, "headers": map[string][]string(h), key: body}))
	// encoding/json sorts a map's keys; the envelope's order is status, headers, body.
	var v struct {
		Status  int                 `json:"status"`
		Headers map[string][]string `json:"headers"`
		Body    *string             `json:"body,omitempty"`
		B64     *string             `json:"body_base64,omitempty"`
	}
	v.Status, v.Headers = resp.Status, h
	if key == "body" {
		v.Body = &body
	} else {
		v.B64 = &body
	}
	buf.Reset()
	require.NoError(t, enc.Encode(v))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func FuzzEncodeResponse(f *testing.F) {
	f.Add(200, "X-Name", "value", []byte(`{"a":"<b>&\u2028"}`))
	f.Add(503, "Retry-After", "\x00\x1f\x7f\"\\\b\f\n\r\t", []byte("\xff\xfe binary"))
	f.Add(0, "", "\xe2\x80\xa9 \xed\xa0\x80 \xc3", []byte{})
	f.Fuzz(func(t *testing.T, status int, name, value string, body []byte) {
		resp := Response{Status: status, Headers: http.Header{name: {value, name}, "Nil": nil, "Empty": {}}, Body: body}
		got := EncodeResponse(resp)
		var back struct {
			Body       *string `json:"body"`
			BodyBase64 *string `json:"body_base64"`
		}
		require.NoError(t, json.Unmarshal(got, &back), "%q", got)
		key, text := "body", string(body)
		if back.BodyBase64 != nil {
			key, text = "body_base64", *back.BodyBase64
		}
		assert.Equal(t, string(byEncodingJSON(t, resp, key, text)), string(got))

		for _, html := range []bool{false, true} {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(html)
			require.NoError(t, enc.Encode(value))
			assert.Equal(t, string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))), string(appendJSONString(nil, value, html)))
		}
	})
}

// The broker's own answer body is what json.Marshal wrote for it, HTML-escaped as Marshal does.
func TestOwnAnswerBodyIsJSONMarshals(t *testing.T) {
	reason := "no granted route matches GET /a?<b>&\"c\"\n\xff\u2028"
	want, err := json.Marshal(struct {
		Error  Outcome `json:"error"`
		Reason string  `json:"reason"`
	}{Denied, reason})
	require.NoError(t, err)
	resp := ownAnswer(http.StatusForbidden, Denied, reason, http.Header{"Retry-After": {"3"}})
	assert.Equal(t, string(want), string(resp.Body))
	assert.Equal(t, http.Header{"Content-Type": {"application/json"}, OutcomeHeader: {"denied"}, "Retry-After": {"3"}}, resp.Headers)
}

func TestEncodeResponseNilHeadersIsAnEmptyObject(t *testing.T) {
	assert.Equal(t, `{"status":204,"headers":{},"body":""}`, string(EncodeResponse(Response{Status: 204})))
}
