package server

import (
	"encoding/json"
	"net/http"
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

// writeJSON answers v with code, under a write deadline for its size.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, code = []byte(`{"error":"the answer could not be encoded","status":500}`), http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	writeBytes(w, append(b, '\n'))
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
