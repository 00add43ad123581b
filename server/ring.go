package server

import "sync"

// ring keeps the most recent run answers for GET /v1/runs/{id}, each with the client that ran
// it; the oldest is dropped past its capacity.
type ring struct {
	mu    sync.Mutex
	order []string // run ids, oldest first, as a circular buffer
	next  int
	byID  map[string]recentRun
}

type recentRun struct {
	client string
	answer runAnswer
}

func newRing(n int) *ring {
	return &ring{order: make([]string, n), byID: make(map[string]recentRun, n)}
}

func (r *ring) put(id, client string, a runAnswer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.order[r.next]; old != "" {
		delete(r.byID, old)
	}
	r.order[r.next] = id
	r.next = (r.next + 1) % len(r.order)
	r.byID[id] = recentRun{client: client, answer: a}
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
