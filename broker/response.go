package broker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/plimsoll/plimsoll/abi"
)

// OutcomeHeader tells the guest the broker answered a call itself, and why.
const OutcomeHeader = abi.OutcomeHeader

// envelope is the response envelope's JSON shape; exactly one of Body and BodyBase64 is set.
type envelope struct {
	Status     int                 `json:"status"`
	Headers    map[string][]string `json:"headers"`
	Body       *string             `json:"body,omitempty"`
	BodyBase64 *string             `json:"body_base64,omitempty"`
}

// EncodeResponse renders a response envelope: text bodies as "body", anything else as
// "body_base64", so no byte is lost.
func EncodeResponse(resp Response) []byte {
	env := envelope{Status: resp.Status, Headers: resp.Headers}
	if env.Headers == nil {
		env.Headers = map[string][]string{}
	}
	if utf8.Valid(resp.Body) {
		s := string(resp.Body)
		env.Body = &s
	} else {
		s := base64.StdEncoding.EncodeToString(resp.Body)
		env.BodyBase64 = &s
	}
	var buf bytes.Buffer
	buf.Grow(len(resp.Body) + 128)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(env); err != nil {
		// Unreachable: every field is a plain string, int or string map.
		return []byte(`{"status":500,"headers":{},"body":"plimsoll: response encoding failed"}`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// ownAnswer builds a response the broker gives itself, with a JSON body naming the outcome.
func ownAnswer(status int, outcome Outcome, reason string, extra http.Header) Response {
	body, _ := json.Marshal(struct {
		Error  Outcome `json:"error"`
		Reason string  `json:"reason"`
	}{outcome, reason})
	h := make(http.Header, 2+len(extra))
	h["Content-Type"], h[OutcomeHeader] = []string{"application/json"}, []string{string(outcome)}
	for k, v := range extra {
		h[k] = v
	}
	return Response{Status: status, Headers: h, Body: body}
}

func shedAnswer(reason string, retryAfter int) Response {
	return ownAnswer(http.StatusServiceUnavailable, Shed, reason,
		http.Header{"Retry-After": {strconv.Itoa(retryAfter)}})
}

// isHopByHop reports the headers that describe one connection, not the message; they never
// reach the guest. Names are canonical, as in a response's Header.
func isHopByHop(name string) bool {
	switch name {
	case "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

func stripHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for name := range h {
		if isHopByHop(name) {
			delete(h, name)
		}
	}
}
