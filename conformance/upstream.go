package conformance

import (
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// basePath is the path part of every scenario's base_url: the upstream sees it in front of
// each guest path, and received expectations leave it out.
const basePath = "/v1"

// maxReceivedBody caps what the upstream keeps of one request body.
const maxReceivedBody = 16 << 20

// received is one request as the upstream got it.
type received struct {
	Method     string
	RequestURI string
	Header     http.Header
	Body       []byte
}

// upstream is a scenario's API on loopback: it answers by script and records every request.
type upstream struct {
	routes []UpstreamRoute
	srv    *http.Server
	url    string

	mu     sync.Mutex
	counts []int
	seen   []received
	held   []int           // per route: requests held by a wait_for reply now
	gates  []chan struct{} // per route: closed once wait_for requests were held at once
}

func startUpstream(routes []UpstreamRoute) (*upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &upstream{routes: routes, counts: make([]int, len(routes)), url: "http://" + ln.Addr().String(),
		held: make([]int, len(routes)), gates: make([]chan struct{}, len(routes))}
	for i := range u.gates {
		u.gates[i] = make(chan struct{})
	}
	u.srv = &http.Server{Handler: u, ErrorLog: log.New(io.Discard, "", 0), ReadHeaderTimeout: 10 * time.Second}
	go u.srv.Serve(ln)
	return u, nil
}

// close stops the server and ends requests still waiting on a delay.
func (u *upstream) close() {
	_ = u.srv.Close()
}

// requests returns what the upstream received so far, in order.
func (u *upstream) requests() []received {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]received(nil), u.seen...)
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxReceivedBody))
	u.mu.Lock()
	u.seen = append(u.seen, received{Method: r.Method, RequestURI: r.RequestURI, Header: r.Header.Clone(), Body: body})
	idx := u.match(r.Method, r.URL.EscapedPath())
	var reply Reply
	if idx >= 0 {
		replies := u.routes[idx].Replies
		reply = replies[min(u.counts[idx], len(replies)-1)]
		u.counts[idx]++
	}
	u.mu.Unlock()

	if idx < 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		msg, _ := json.Marshal(map[string]string{"error": "the scenario's upstream has no route for " + r.Method + " " + r.URL.EscapedPath()})
		w.Write(msg)
		return
	}
	if reply.WaitFor > 0 && !u.gate(idx, reply.WaitFor, r) {
		return // the request ended first: the caller never overlapped enough calls
	}
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	for _, h := range reply.Headers {
		w.Header()[http.CanonicalHeaderKey(h.Name)] = append([]string(nil), h.Values...)
	}
	var content []byte
	if reply.Echo != "" {
		vals := r.Header.Values(reply.Echo)
		w.Header()["X-Echo"] = vals
		content = []byte(strings.Join(vals, "\n"))
	}
	if reply.Body != nil {
		content = reply.Body.Content()
		if reply.Body.Kind == "json" && w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
	}
	if reply.Truncate {
		w.Header().Set("Content-Length", strconv.Itoa(len(content)+1000))
		w.WriteHeader(reply.Status)
		w.Write(content)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler) // drops the connection without finishing the body
	}
	w.WriteHeader(reply.Status)
	w.Write(content)
}

// gate holds a request until n requests of route idx are held at once, which opens the gate for
// them and every later one. It reports false when the request ended first.
func (u *upstream) gate(idx, n int, r *http.Request) bool {
	u.mu.Lock()
	u.held[idx]++
	if u.held[idx] >= n {
		select {
		case <-u.gates[idx]:
		default:
			close(u.gates[idx])
		}
	}
	g := u.gates[idx]
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		u.held[idx]--
		u.mu.Unlock()
	}()
	select {
	case <-g:
		return true
	case <-r.Context().Done():
		return false
	}
}

// match returns the index of the first route for method and the request's path, or -1.
func (u *upstream) match(method, p string) int {
	rel, ok := strings.CutPrefix(p, basePath)
	if !ok {
		return -1
	}
	for i, r := range u.routes {
		if r.Method == method && matchPattern(r.Pattern, rel) {
			return i
		}
	}
	return -1
}

// matchPattern matches a path against a pattern where '*' stands for one non-empty segment.
func matchPattern(pattern, p string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(p, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if ps[i] != xs[i] && (ps[i] != "*" || xs[i] == "") {
			return false
		}
	}
	return true
}
