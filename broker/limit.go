package broker

import (
	"context"
	"net/http"
	"time"

	"github.com/plimsoll/plimsoll/bulkhead"
)

// The API limit: a call the breaker and the budget let through waits here for a slot of its
// API's bulkhead (shared by every run of the process) before it is forwarded. A call the
// bulkhead refuses, displaces or times out is shed exactly like a breaker shed (503 +
// Retry-After), its budget given back, and the run's breaker is not touched: busy, not broken.

// limitRetryAfter is the Retry-After of a call shed by the API limit: a queue turns over in
// round trips, so the shortest wait the broker advertises.
const limitRetryAfter = 1

// limitedForward waits for a slot when the call's API has a limit, then forwards; the round trip
// of a forwarded call teaches the limit.
func (r *Broker) limitedForward(ctx context.Context, s *Started) Response {
	bh := r.limits.bulkheadFor(r.profile, s.entry.Route, r.now())
	if bh == nil {
		return r.forward(ctx, s.req, s.entry, s.at)
	}
	tk := bh.Enter(r.now(), r.tier)
	if resp, refused := r.awaitSlot(ctx, bh, tk, &s.entry, s.at); refused {
		return resp
	}
	sent := r.now()
	resp := r.forward(ctx, s.req, s.entry, s.at)
	done := r.now()
	_, own := resp.Headers[OutcomeHeader]
	if own && resp.Status != http.StatusGatewayTimeout {
		bh.Leave(tk, done) // no usable reply: it says nothing about the API's latency
		return resp
	}
	overloaded := !own && (resp.Status == http.StatusServiceUnavailable || resp.Status == http.StatusTooManyRequests)
	bh.Release(tk, done, done.Sub(sent), overloaded || own) // a call timeout is a breach too
	return resp
}

// awaitSlot waits until the ticket is admitted or shed, its sojourn bound passes, or the run
// ends. After the wait the operator's flag and the breaker are read again: a call is never
// forwarded into a window that opened while it queued.
func (r *Broker) awaitSlot(ctx context.Context, bh *bulkhead.Bulkhead, tk *bulkhead.Ticket, entry *TraceEntry, t0 time.Time) (Response, bool) {
	if done := tk.Done(); done != nil {
		timer := time.NewTimer(tk.Deadline().Sub(r.now()))
		select {
		case <-done:
		case <-timer.C:
			bh.Expire(tk, r.now())
		case <-ctx.Done():
			bh.Leave(tk, r.now())
		}
		timer.Stop()
	}
	admitted, waited, shed, pending := bh.Result(tk)
	entry.QueueMs = float64(waited.Microseconds()) / 1000
	switch {
	case pending || (!admitted && shed == nil): // left: the run is ending
		r.refund()
		return r.fail(*entry, http.StatusBadGateway, "call canceled: the run is ending", t0), true
	case shed != nil:
		r.refund()
		reason := shed.Reason()
		return r.answer(*entry, shedAnswer(reason, limitRetryAfter), Shed, reason, t0), true
	}
	if a, forced := r.forcedShed(); forced {
		bh.Leave(tk, r.now())
		r.refund()
		return r.answer(*entry, shedAnswer(a.reason, a.retryAfter), Shed, a.reason, t0), true
	}
	if reason, retry, open := r.breakerOpenNow(); open {
		bh.Leave(tk, r.now())
		r.refund()
		return r.answer(*entry, shedAnswer(reason, retry), Shed, reason, t0), true
	}
	return Response{}, false
}

// breakerOpenNow says whether the run's breaker opened since the call was admitted.
func (r *Broker) breakerOpenNow() (reason string, retryAfter int, open bool) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.breaker.Open(now) {
		return "", 0, false
	}
	reason = "breaker opened after upstream 503 while the call waited for the API limit"
	if r.breaker.Is429Window() {
		reason = "breaker opened after upstream 429 while the call waited for the API limit"
	}
	return reason, r.breaker.RetryAfter(now), true
}

// refund gives back the budget a call was charged at admission, when it is not forwarded.
func (r *Broker) refund() {
	r.mu.Lock()
	if r.spent > 0 {
		r.spent--
	}
	r.mu.Unlock()
}
