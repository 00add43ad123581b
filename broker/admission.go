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

// probeFor sends the health probe for a call picked to probe. The call is shed unless the probe
// answers 2xx; then the breaker is closed and the call goes on if the budget allows.
func (r *Broker) probeFor(ctx context.Context, entry *TraceEntry, t0 time.Time) (Response, bool) {
	status, ok := r.probe(ctx)
	if !ok {
		entry.Probe = ProbeNotReady
		reason := fmt.Sprintf("breaker open; health probe %s answered %s", r.profile.HealthCheck, probeResult(status))
		return r.answer(*entry, shedAnswer(reason, r.retryAfter()), Shed, reason, t0), true
	}
	entry.Probe = ProbeOK
	return r.refuseAdmission(*entry, r.spend(), t0)
}

// refuseAdmission answers a call the breaker sheds or the budget refuses; refused is false when
// the call may be forwarded.
func (r *Broker) refuseAdmission(entry TraceEntry, a admission, t0 time.Time) (resp Response, refused bool) {
	switch a.outcome {
	case Shed:
		return r.answer(entry, shedAnswer(a.reason, a.retryAfter), Shed, a.reason, t0), true
	case OverBudget:
		return r.answer(entry, ownAnswer(http.StatusTooManyRequests, OverBudget, a.reason, nil), OverBudget, a.reason, t0), true
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
