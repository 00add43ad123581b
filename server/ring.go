package server

import (
	"encoding/json"
	"sync"
	"unicode/utf8"
)

// Bounds of the recent-runs ring: GET /v1/runs/{id} answers from it. A run's output and log
// are kept up to a size (and said to be cut, in the answer's truncated field); the ring holds at
// most RecentRuns runs (Config) and RecentBytes in all. Past either, the oldest run of the
// client holding the most bytes goes first: one client's flood evicts its own runs, not
// another's.
const (
	RecentBytes       = 64 << 20
	RecentOutputBytes = 256 << 10
	RecentLogBytes    = 64 << 10
	RecentTraceCalls  = 1024
)

// ring keeps the most recent run answers, each with the client that ran it.
type ring struct {
	mu       sync.Mutex
	maxRuns  int
	maxBytes int
	byID     map[string]recentRun
	byClient map[string]*clientRuns
	bytes    int
}

type recentRun struct {
	client string
	answer runAnswer
	size   int
}

// clientRuns are one client's run ids, oldest first, and the bytes they hold.
type clientRuns struct {
	ids   []string
	bytes int
}

func newRing(n int) *ring {
	return &ring{maxRuns: n, maxBytes: RecentBytes, byID: map[string]recentRun{}, byClient: map[string]*clientRuns{}}
}

// put keeps a, whose JSON is size bytes (the caller has encoded it, to answer it).
func (r *ring) put(id, client string, a runAnswer, size int) {
	if k := keepable(a); len(k.Truncated) > len(a.Truncated) {
		a, size = k, answerSize(k) // cut: it holds less than its answer did
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.byID) > 0 && (len(r.byID) >= r.maxRuns || r.bytes+size > r.maxBytes) {
		r.evictLocked()
	}
	cr := r.byClient[client]
	if cr == nil {
		cr = &clientRuns{}
		r.byClient[client] = cr
	}
	cr.ids = append(cr.ids, id)
	cr.bytes += size
	r.bytes += size
	r.byID[id] = recentRun{client: client, answer: a, size: size}
}

// evictLocked drops the oldest run of the client holding the most bytes.
func (r *ring) evictLocked() {
	var most *clientRuns
	var name string
	for c, cr := range r.byClient {
		if most == nil || cr.bytes > most.bytes || cr.bytes == most.bytes && c < name {
			most, name = cr, c
		}
	}
	id := most.ids[0]
	most.ids = most.ids[1:]
	size := r.byID[id].size
	most.bytes -= size
	r.bytes -= size
	delete(r.byID, id)
	if len(most.ids) == 0 {
		delete(r.byClient, name)
	}
}

// get returns the run's answer if client ran it.
func (r *ring) get(id, client string) (runAnswer, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rr, ok := r.byID[id]
	if !ok || rr.client != client {
		return runAnswer{}, false
	}
	return rr.answer, true
}

// keepable is the answer as the ring keeps it: output, log and trace cut to their bounds, each
// cut named in Truncated.
func keepable(a runAnswer) runAnswer {
	if len(a.Output) > RecentOutputBytes {
		i := RecentOutputBytes
		for i > 0 && !utf8.RuneStart(a.Output[i]) {
			i--
		}
		a.Output, _ = json.Marshal(string(a.Output[:i])) // the output's first bytes, as a string: cut JSON is not JSON
		a.Truncated = append(a.Truncated, "output")
	}
	if len(a.Log) > RecentLogBytes {
		i := len(a.Log) - RecentLogBytes
		for i < len(a.Log) && !utf8.RuneStart(a.Log[i]) {
			i++
		}
		a.Log = a.Log[i:] // the tail: the end of a log says most
		a.Truncated = append(a.Truncated, "log")
	}
	if len(a.Trace) > RecentTraceCalls {
		a.Trace = a.Trace[:RecentTraceCalls]
		a.Truncated = append(a.Truncated, "trace")
	}
	return a
}

// answerSize is what the ring counts for an answer: its JSON size, about what it holds.
func answerSize(a runAnswer) int {
	b, _ := json.Marshal(a)
	return len(b)
}
