package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/plimsoll/plimsoll/broker"
)

// MaxStreamBuffer is how many bytes of NDJSON lines a run may have waiting for its client. The
// run's callbacks only queue (host.RunOptions says they must not block): a client that reads
// slower than the run writes falls behind, and past this its stream is cut (one "cut" line says
// so, and log and call lines after it are dropped); the run goes on to its own end, is audited once, and its result
// line is still sent. One writer goroutine per stream writes under a deadline (clientwrite.go);
// once a write fails the client is gone and nothing more is queued.
const MaxStreamBuffer = 1 << 20

// streamer writes the NDJSON answer: log lines and calls as they happen, then the result.
type streamer struct {
	w  http.ResponseWriter
	mu sync.Mutex
	// queue holds the lines not yet taken by the writer; queued counts their bytes.
	queue   [][]byte
	queued  int
	cut     bool // fell behind: log and call lines are dropped
	failed  bool // a write failed: the client is gone
	closed  bool // the result is queued: the writer ends once the queue is empty
	wake    chan struct{}
	done    chan struct{}
	pending []byte // log bytes after the last newline
}

func newStreamer(w http.ResponseWriter, runID string) *streamer {
	w.Header().Set("Content-Type", MediaNDJSON)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set(HeaderRunID, runID) // a client whose stream is cut can still GET /v1/runs/{id}
	w.WriteHeader(http.StatusOK)
	st := &streamer{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go st.write()
	return st
}

// HeaderRunID names the run on a streamed answer, before its first line.
const HeaderRunID = "Plimsoll-Run-Id"

type logLine struct {
	Type string `json:"type"`
	Line string `json:"line"`
}

type callLine struct {
	Type  string            `json:"type"`
	Entry broker.TraceEntry `json:"entry"`
}

type cutLine struct {
	Type   string `json:"type"` // "cut"
	Reason string `json:"reason"`
}

func (st *streamer) call(e broker.TraceEntry) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.queueLocked(callLine{Type: "call", Entry: e}, false)
}

func (st *streamer) log(p []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.cut || st.failed {
		return
	}
	st.pending = append(st.pending, p...)
	for {
		i := bytes.IndexByte(st.pending, '\n')
		if i < 0 {
			return
		}
		st.queueLocked(logLine{Type: "log", Line: string(st.pending[:i])}, false)
		st.pending = st.pending[i+1:]
	}
}

// finish sends a last log line that had no newline and the result, and waits until the writer
// is done: all written, or the client gone or too slow (each write has its deadline).
func (st *streamer) finish(result runAnswer) {
	st.mu.Lock()
	if len(st.pending) > 0 {
		st.queueLocked(logLine{Type: "log", Line: string(st.pending)}, false)
		st.pending = nil
	}
	result.Type = "result"
	st.queueLocked(result, true)
	st.closed = true
	st.mu.Unlock()
	st.signal()
	<-st.done
}

// queueLocked queues one line; a line past MaxStreamBuffer cuts the stream, unless it is the
// result, which always goes.
func (st *streamer) queueLocked(v any, result bool) {
	if st.failed {
		return
	}
	if st.cut && !result {
		return
	}
	b, _ := json.Marshal(v)
	b = append(b, '\n')
	if !result && st.queued+len(b) > MaxStreamBuffer {
		st.cut = true
		b, _ = json.Marshal(cutLine{Type: "cut", Reason: fmt.Sprintf("the client read slower than the run wrote: over %d bytes were waiting, so log and call lines from here are dropped; the run goes on and its result follows", MaxStreamBuffer)})
		b = append(b, '\n')
	}
	st.queue = append(st.queue, b)
	st.queued += len(b)
	st.signal()
}

func (st *streamer) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// write is the stream's one writer: it takes what is queued and writes it, under a deadline.
func (st *streamer) write() {
	defer close(st.done)
	for range st.wake {
		for {
			st.mu.Lock()
			lines, closed := st.queue, st.closed
			st.queue, st.queued = nil, 0
			st.mu.Unlock()
			if len(lines) == 0 {
				if closed {
					return
				}
				break
			}
			if err := writeBytes(st.w, bytes.Join(lines, nil)); err != nil {
				st.mu.Lock()
				st.failed, st.queue, st.queued = true, nil, 0
				st.mu.Unlock()
				return
			}
		}
	}
}
