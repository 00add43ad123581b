package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
)

// answerGate holds back stdin's EOF until every request read so far has been answered (or
// cancelled by the client), so a client that pipes its requests and closes stdin
// (printf … | plimsoll-run mcp) gets every answer.
type answerGate struct {
	ctx context.Context

	mu      sync.Mutex
	pending map[string]bool // ids of requests read and not answered
	broken  bool            // stdout refused a write: no answer can arrive any more
	changed chan struct{}   // closed and replaced when pending shrinks or broken is set
}

func newAnswerGate(ctx context.Context) *answerGate {
	return &answerGate{ctx: ctx, pending: map[string]bool{}, changed: make(chan struct{})}
}

// rpcLine is what the gate reads of a JSON-RPC line.
type rpcLine struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// rpcKind is what one JSON-RPC line is, as far as the gate counts: a request (with its id), a
// response (to id), or a cancellation of request id.
func rpcKind(line []byte) (kind, id string) {
	var m rpcLine
	if json.Unmarshal(line, &m) != nil {
		return "", ""
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method == "notifications/cancelled" && len(m.Params.RequestID) > 0:
		return "cancel", canonicalID(m.Params.RequestID)
	case hasID && m.Method != "":
		return "request", canonicalID(m.ID)
	case hasID:
		return "response", canonicalID(m.ID)
	}
	return "", ""
}

// canonicalID is an id as the server writes it back: a request's 1.0 is answered as 1, and
// "\u0041" as "A"; keyed by its raw text, such a request would hold stdin's EOF for ever.
func canonicalID(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

func (g *answerGate) count(line []byte, reading bool) {
	kind, id := rpcKind(line)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case reading && kind == "request":
		g.pending[id] = true
	case reading && kind == "cancel", !reading && kind == "response":
		delete(g.pending, id)
		g.notifyLocked()
	}
}

func (g *answerGate) abandon() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.broken = true
	g.notifyLocked()
}

func (g *answerGate) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// wait returns when every request read has been answered or cancelled, stdout is gone, or ctx
// ends.
func (g *answerGate) wait() {
	for {
		g.mu.Lock()
		done, changed := len(g.pending) == 0 || g.broken, g.changed
		g.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-g.ctx.Done():
			return
		}
	}
}

// lines calls fn with each complete line that passes through, keeping a partial one for later.
type lines struct {
	buf bytes.Buffer
	fn  func([]byte)
}

func (l *lines) feed(p []byte) {
	l.buf.Write(p)
	for {
		i := bytes.IndexByte(l.buf.Bytes(), '\n')
		if i < 0 {
			return
		}
		l.fn(l.buf.Next(i + 1))
	}
}

type gatedReader struct {
	r    io.Reader
	g    *answerGate
	seen lines
}

func (g *answerGate) reader(r io.Reader) io.ReadCloser {
	gr := &gatedReader{r: r, g: g}
	gr.seen.fn = func(line []byte) { g.count(line, true) }
	return gr
}

func (r *gatedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.seen.feed(p[:n])
	if err == io.EOF {
		if r.seen.buf.Len() > 0 { // a last request without its newline still counts
			r.g.count(r.seen.buf.Bytes(), true)
			r.seen.buf.Reset()
		}
		r.g.wait()
	}
	return n, err
}

func (r *gatedReader) Close() error { return nil }

type gatedWriter struct {
	mu   sync.Mutex // the transport may write from more than one goroutine
	w    io.Writer
	g    *answerGate
	seen lines
}

func (g *answerGate) writer(w io.Writer) io.WriteCloser {
	gw := &gatedWriter{w: w, g: g}
	gw.seen.fn = func(line []byte) { g.count(line, false) }
	return gw
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.w.Write(p)
	w.seen.feed(p[:n])
	if err != nil {
		w.g.abandon()
	}
	return n, err
}

func (w *gatedWriter) Close() error { return nil }
