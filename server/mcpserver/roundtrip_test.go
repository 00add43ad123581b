package mcpserver

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/host"
)

// waitingRun registers a run that waits on approval "ap1" for session "s1", as an input-required
// result leaves it, and returns the state that result carried.
func waitingRun(rt *roundTrips, deadline time.Time) (*suspended, string) {
	r := &suspended{id: "run1", session: "s1", done: make(chan host.Result, 1)}
	rt.runs[r.id] = r
	res := rt.inputRequired(r, ask{q: broker.ApprovalRequest{ID: "ap1", Deadline: deadline}, reply: make(chan broker.ApprovalAnswer, 1)})
	return r, res.RequestState
}

func TestRoundTripStateChecks(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	rt := newRoundTrips()
	r, state := waitingRun(rt, now.Add(time.Minute))
	params := func(st string) *mcp.CallToolParamsRaw {
		return &mcp.CallToolParamsRaw{RequestState: st, InputResponses: mcp.InputResponseMap{"ap1": &mcp.ElicitResult{Action: "accept"}}}
	}

	_, err := rt.resume("s2", params(state), now)
	assert.ErrorIs(t, err, ErrStateForeign, "another session's state")
	_, err = rt.resume("s1", params(state), now.Add(time.Minute))
	assert.ErrorIs(t, err, ErrStateExpired, "at the approval's deadline")
	other := newRoundTrips() // another process: another key
	_, err = other.resume("s1", params(state), now)
	assert.ErrorIs(t, err, ErrStateTampered)

	got, err := rt.resume("s1", params(state), now)
	require.NoError(t, err)
	assert.Same(t, r, got)
	_, err = rt.resume("s1", params(state), now)
	assert.ErrorIs(t, err, ErrStateReplayed, "single use")
}

func TestRoundTripAnswers(t *testing.T) {
	for _, tc := range []struct {
		resp     mcp.InputResponse
		decision string
	}{
		{&mcp.ElicitResult{Action: "accept"}, broker.ApprovalGranted},
		{&mcp.ElicitResult{Action: "decline"}, broker.ApprovalDeclined},
		{&mcp.ElicitResult{Action: "cancel"}, broker.ApprovalCanceled},
		{nil, broker.ApprovalCanceled},
		{&mcp.ListRootsResult{}, broker.ApprovalCanceled},
	} {
		assert.Equal(t, tc.decision, answerOf(tc.resp).Decision, "%#v", tc.resp)
	}
}

// FuzzRoundTripState: a requestState is client input. Opening it never panics, every refusal
// says tampered, and no token opens under two keys.
func FuzzRoundTripState(f *testing.F) {
	ours, theirs := newStateSigner(), newStateSigner()
	f.Add(ours.sign(roundState{Run: "r", Session: "s", Approval: "a", Nonce: "n", Expires: 1}))
	f.Add(theirs.sign(roundState{Run: "r"}))
	f.Fuzz(func(t *testing.T, token string) {
		_, errOurs := ours.open(token)
		_, errTheirs := theirs.open(token)
		if errOurs == nil && errTheirs == nil {
			t.Fatalf("%q opened under two keys", token)
		}
		if errOurs != nil && !errors.Is(errOurs, ErrStateTampered) {
			t.Fatalf("%q: %v", token, errOurs)
		}
	})
}

// A retry the server took (resume returned nil) is the answer the run gets, also when the
// approval's wait ends at that moment; a retry that came too late is refused.
func TestRoundTripAnswerTakenIsTheAnswerGiven(t *testing.T) {
	for i := range 200 {
		synctest.Test(t, func(t *testing.T) {
			rt := newRoundTrips()
			r := &suspended{id: "run1", session: "s1", asks: make(chan ask), done: make(chan host.Result, 1)}
			rt.runs[r.id] = r
			ctx, cancel := context.WithCancel(context.Background())
			got := make(chan broker.ApprovalAnswer, 1)
			go func() {
				ans, _ := r.elicitor("agent")(ctx, broker.ApprovalRequest{ID: "ap1", Deadline: time.Now().Add(time.Hour)})
				got <- ans
			}()
			state := rt.inputRequired(r, <-r.asks).RequestState
			synctest.Wait() // the run waits for the retry
			cancel()        // the wait ends (its timeout, the run's end) as the retry arrives
			_, err := rt.resume("s1", &mcp.CallToolParamsRaw{RequestState: state,
				InputResponses: mcp.InputResponseMap{"ap1": &mcp.ElicitResult{Action: "accept"}}}, time.Now())
			ans := <-got
			if err == nil && ans.Decision != broker.ApprovalGranted {
				t.Fatalf("round %d: the retry was taken but the run got %q", i, ans.Decision)
			}
			if err != nil && ans.Decision != broker.ApprovalTimeout {
				t.Fatalf("round %d: %v, and the run got %q", i, err, ans.Decision)
			}
		})
	}
}
