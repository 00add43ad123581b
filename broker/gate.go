package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/plimsoll/plimsoll/breaker"
)

// verdict is what the breaker and the budget say about one call, decided under one lock.
type verdict struct {
	decision   breaker.Decision
	outcome    Outcome // Shed or OverBudget when the call must not go on; "" otherwise
	reason     string
	retryAfter int // seconds, for a shed call
}

// ForcedOpenReason starts the trace reason of every call shed because the operator forced its
// profile open; the operator's own reason follows.
const ForcedOpenReason = "forced open by the operator: "

// forcedRetryAfter is the Retry-After of a call shed as forced open: the flag has no end the
// broker knows, so it is the longest wait the broker ever advertises.
const forcedRetryAfter = int(breaker.MaxRetryAfter / time.Second)

// forcedShed reads the operator's flag; when it is set, the call is shed without consulting the
// breaker (so no probe is picked) or the budget.
func (r *Broker) forcedShed() (verdict, bool) {
	if r.forcedOpen == nil {
		return verdict{}, false
	}
	why, open := r.forcedOpen()
	if !open {
		return verdict{}, false
	}
	r.mu.Lock()
	if !r.finished {
		r.forced = why
	}
	r.mu.Unlock()
	return verdict{decision: breaker.Shed, outcome: Shed, reason: ForcedOpenReason + why, retryAfter: forcedRetryAfter}, true
}

// probeFor sends the health probe for a call picked to probe. The call is shed unless the probe
// answers 2xx; then the breaker is closed and the call goes on if the budget allows. A profile
// forced open between the pick and now sends no probe: the pick is given back to the breaker as
// a failed probe, and the call is shed as forced open.
// charge is false for a gated call, whose budget was charged before its approval.
func (r *Broker) probeFor(ctx context.Context, entry *TraceEntry, t0 time.Time, charge bool) (Response, bool) {
	if a, forced := r.forcedShed(); forced {
		r.mu.Lock()
		r.breaker.RecordProbe(r.now(), 0)
		r.mu.Unlock()
		return r.refuseAtGate(*entry, a, t0)
	}
	status, ok := r.probe(ctx)
	if !ok {
		entry.Probe = ProbeNotReady
		reason := fmt.Sprintf("breaker open; health probe %s answered %s", r.profile.HealthCheck, probeResult(status))
		if status >= 200 && status < 300 {
			reason = fmt.Sprintf("breaker open after upstream 429; health probe %s answered %d but a 429 arrived while it was out", r.profile.HealthCheck, status)
		}
		return r.answer(*entry, shedAnswer(reason, r.retryAfter()), Shed, reason, t0), true
	}
	entry.Probe = ProbeOK
	if !charge {
		return Response{}, false
	}
	return r.refuseAtGate(*entry, r.spend(), t0)
}

// refuseAtGate answers a call the breaker sheds or the budget refuses; refused is false when
// the call may be forwarded.
func (r *Broker) refuseAtGate(entry TraceEntry, a verdict, t0 time.Time) (resp Response, refused bool) {
	switch a.outcome {
	case Shed:
		return r.answer(entry, shedAnswer(a.reason, a.retryAfter), Shed, a.reason, t0), true
	case OverBudget:
		var h http.Header
		if a.retryAfter > 0 { // a client's quota: its window's end
			h = http.Header{"Retry-After": {strconv.Itoa(a.retryAfter)}}
		}
		return r.answer(entry, ownAnswer(http.StatusTooManyRequests, OverBudget, a.reason, h), OverBudget, a.reason, t0), true
	}
	return Response{}, false
}

// gate takes the breaker's decision and, when the call may go on, charges the budget. The
// operator's forced-open flag comes first: while it is set, the breaker is not consulted. charge
// is false for a gated call after its approval: its budget was charged before the wait.
func (r *Broker) gate(now time.Time, charge bool) verdict {
	if a, forced := r.forcedShed(); forced {
		return a
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a := verdict{decision: r.breaker.Decide(now)}
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
	if !charge {
		return a
	}
	return r.spendLocked(a)
}

func (r *Broker) spend() verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spendLocked(verdict{decision: breaker.Forward})
}

func (r *Broker) spendLocked(a verdict) verdict {
	if r.spent >= r.profile.Budget.Calls {
		a.outcome, a.reason = OverBudget, fmt.Sprintf("budget of %d forwarded calls is spent", r.profile.Budget.Calls)
		return a
	}
	if r.quota != nil {
		if err := r.quota(); err != nil {
			a.outcome, a.reason = OverBudget, err.Error()
			var ra interface{ RetryAfter() int }
			if errors.As(err, &ra) {
				a.retryAfter = ra.RetryAfter()
			}
			return a
		}
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
