package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/plimsoll/plimsoll/server/runqueue"
)

// TestCountedAsTheStatusGoesOut: the request metric is counted when the answer's status is
// written, before the handler returns (a client holding a whole answer, sent with its length,
// finds it counted); a handler that writes nothing is counted as 200 when it returns.
func TestCountedAsTheStatusGoesOut(t *testing.T) {
	s := &Server{metrics: newMetrics(runqueue.New(1, 1), func() bool { return true })}
	count := func(code string) float64 {
		var m dto.Metric
		s.metrics.requests.WithLabelValues("POST /x", code).Write(&m)
		return m.GetCounter().GetValue()
	}
	for _, tc := range []struct {
		name  string
		write func(http.ResponseWriter)
		code  string
	}{
		{"a JSON answer", func(w http.ResponseWriter) { writeJSON(w, http.StatusCreated, map[string]int{"a": 1}) }, "201"},
		{"a write without WriteHeader", func(w http.ResponseWriter) { w.Write([]byte("ok\n")) }, "200"},
		{"a header written twice", func(w http.ResponseWriter) { w.WriteHeader(http.StatusTeapot); w.WriteHeader(http.StatusOK) }, "418"},
	} {
		wrote, finish, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
		h := s.counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tc.write(w)
			close(wrote)
			<-finish
		}))
		before := count(tc.code)
		r := httptest.NewRequest("POST", "/x", nil)
		r.Pattern = "POST /x" // as the mux sets it
		rec := httptest.NewRecorder()
		go func() { h.ServeHTTP(rec, r); close(returned) }()
		<-wrote
		if got := count(tc.code) - before; got != 1 {
			t.Errorf("%s: counted %v times before the handler returned, want 1", tc.name, got)
		}
		close(finish)
		<-returned
		if got := count(tc.code) - before; got != 1 {
			t.Errorf("%s: counted %v times in all, want 1", tc.name, got)
		}
		if cl := rec.Header().Get("Content-Length"); tc.code == "201" && cl != fmt.Sprint(rec.Body.Len()) {
			t.Errorf("%s: Content-Length %q for a %d-byte body", tc.name, cl, rec.Body.Len())
		}
	}
	before := count("200")
	s.counted(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(httptest.NewRecorder(), withPattern(httptest.NewRequest("POST", "/x", nil)))
	if got := count("200") - before; got != 1 {
		t.Errorf("a handler that wrote nothing: counted %v times, want 1 (as 200)", got)
	}
}

func withPattern(r *http.Request) *http.Request {
	r.Pattern = "POST /x"
	return r
}
