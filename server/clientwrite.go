package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Every write to a client has a deadline: a client that stops reading cannot hold a handler, a
// run's answer or a drain longer than this. A write of n bytes may take WriteGrace plus one
// second per WriteRate bytes: a client reading at 64 KiB/s or faster gets any answer.
const (
	WriteGrace = 10 * time.Second
	WriteRate  = 64 << 10 // bytes per second
)

// writeDeadline is when a write of n bytes starting now must be done.
func writeDeadline(n int) time.Time {
	return time.Now().Add(WriteGrace + time.Duration(n/WriteRate)*time.Second)
}

// answerNotEncoded is the body of an answer whose value could not be encoded.
const answerNotEncoded = `{"error":"the answer could not be encoded","status":500}` + "\n"

// writeJSON answers v with code, under a write deadline for its size.
func writeJSON(w http.ResponseWriter, code int, v any) {
	writeBody(w, code, encodeJSON(v))
}

// encodeJSON is v's JSON and a newline, as an answer's body; nil when v cannot be encoded.
func encodeJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return append(b, '\n')
}

// writeBody answers body, a JSON value and a newline from encodeJSON, with code; a nil body
// (the value could not be encoded) answers 500. With its length, the answer goes out in one
// write (no chunk and terminator), so whatever must be visible to its reader is done before.
func writeBody(w http.ResponseWriter, code int, body []byte) {
	if body == nil {
		body, code = []byte(answerNotEncoded), http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	writeBytes(w, body)
}

// writeBytes writes b and flushes it, under a write deadline for its size; the error is the
// client's (gone or too slow), and the connection is not reused after it.
func writeBytes(w http.ResponseWriter, b []byte) error {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(writeDeadline(len(b))) // unsupported only by test recorders
	if _, err := w.Write(b); err != nil {
		return err
	}
	return rc.Flush()
}

// deadlineWriter gives every write and flush of a handler that writes by itself (the MCP SDK's
// answers and event streams) its own deadline, set just before it: an idle stream may stay
// open, a stalled reader fails the write within the deadline.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func withWriteDeadlines(w http.ResponseWriter) http.ResponseWriter {
	return &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(writeDeadline(len(p)))
	return d.ResponseWriter.Write(p)
}

func (d *deadlineWriter) FlushError() error {
	_ = d.rc.SetWriteDeadline(writeDeadline(0))
	return d.rc.Flush()
}

func (d *deadlineWriter) Flush() { _ = d.FlushError() }

func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
