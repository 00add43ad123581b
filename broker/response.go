package broker

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/plimsoll/plimsoll/abi"
)

// OutcomeHeader tells the guest the broker answered a call itself, and why.
const OutcomeHeader = abi.OutcomeHeader

// EncodeResponse renders a response envelope: text bodies as "body", anything else as
// "body_base64", so no byte is lost. Headers are written in sorted order; a nil map as {}.
func EncodeResponse(resp Response) []byte {
	if utf8.Valid(resp.Body) {
		dst := make([]byte, 0, len(resp.Body)+envelopeRoom(resp.Headers))
		return appendEnvelope(dst, resp.Status, resp.Headers, "body", resp.Body)
	}
	b64 := base64.StdEncoding.EncodeToString(resp.Body)
	dst := make([]byte, 0, len(b64)+envelopeRoom(resp.Headers))
	return appendEnvelope(dst, resp.Status, resp.Headers, "body_base64", b64)
}

// envelopeRoom is a first guess at an envelope's size beside its body, so it is built in one go.
func envelopeRoom(h http.Header) int {
	n := 64
	for name, vs := range h {
		n += len(name) + 6
		for _, v := range vs {
			n += len(v) + 3
		}
	}
	return n
}

// ownAnswer builds a response the broker gives itself, with a JSON body naming the outcome.
func ownAnswer(status int, outcome Outcome, reason string, extra http.Header) Response {
	body := appendJSONString(append(make([]byte, 0, len(reason)+48), `{"error":`...), string(outcome), true)
	body = append(appendJSONString(append(body, `,"reason":`...), reason, true), '}') // as json.Marshal writes it
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
