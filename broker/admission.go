package broker

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/plimsoll/plimsoll/breaker"
)

// admission is what the breaker and the budget say about one call, decided under one lock.
type admission struct {
	decision   breaker.Decision
	outcome    Outcome // Shed or OverBudget when the call must not go on; "" otherwise
	reason     string
	retryAfter int // seconds, for a shed call
}

// admit runs the breaker and budget steps. It returns shed=true with the answer to give when the
// call must not be forwarded.
func (r *Broker) admit(ctx context.Context, entry *TraceEntry, t0 time.Time) (Response, bool) {
	a := r.admission(t0)
	if a.decision == breaker.Probe {
		status, ok := r.probe(ctx)
		if !ok {
			entry.Probe = ProbeNotReady
			reason := fmt.Sprintf("breaker open; health probe %s answered %s", r.profile.HealthCheck, probeResult(status))
			return r.answer(*entry, shedAnswer(reason, r.retryAfter()), Shed, reason, t0), true
		}
		entry.Probe = ProbeOK
		a = r.spend() // the probe closed the breaker: the call goes on if the budget allows
	}
	switch a.outcome {
	case Shed:
		return r.answer(*entry, shedAnswer(a.reason, a.retryAfter), Shed, a.reason, t0), true
	case OverBudget:
		return r.answer(*entry, ownAnswer(http.StatusTooManyRequests, OverBudget, a.reason, nil), OverBudget, a.reason, t0), true
	}
	return Response{}, false
}

// admission takes the breaker's decision and, when the call may go on, charges the budget.
func (r *Broker) admission(now time.Time) admission {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := admission{decision: r.breaker.Decide(now)}
	switch a.decision {
	case breaker.Probe:
		return a // the probe's answer decides; see admit
	case breaker.Shed:
		a.outcome, a.reason = Shed, "breaker open after upstream 503"
		if r.breaker.Is429Window() {
			a.reason = "breaker open after upstream 429; waiting out Retry-After"
		}
		a.retryAfter = r.breaker.RetryAfter(r.now()) // read after the decision, as a shed answer is given
		return a
	}
	return r.spendLocked(a)
}

func (r *Broker) spend() admission {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spendLocked(admission{decision: breaker.Forward})
}

func (r *Broker) spendLocked(a admission) admission {
	if r.spent >= r.profile.Budget.Calls {
		a.outcome, a.reason = OverBudget, fmt.Sprintf("budget of %d forwarded calls is spent", r.profile.Budget.Calls)
		return a
	}
	r.spent++
	return a
}

func (r *Broker) retryAfter() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.breaker.RetryAfter(r.now())
}

func probeResult(status int) string {
	if status == 0 {
		return "nothing in time"
	}
	return fmt.Sprint(status)
}
