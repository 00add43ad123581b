package server

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// An operator's answer the desk took (answer returned nil, so the admin plane said 200) is the
// answer the waiting call gets, also when its wait ends at that moment; an answer that came too
// late is refused with ErrNoApproval. Never a 200 for an answer the call did not get.
func TestDeskAnswerTakenIsTheAnswerGiven(t *testing.T) {
	for i := range 200 {
		q := broker.ApprovalRequest{ID: "ap", Hash: "h", Channels: []string{profiles.ChannelAdmin}}
		synctest.Test(t, func(t *testing.T) {
			d := newApprovalDesk()
			ctx, cancel := context.WithCancel(context.Background())
			got := make(chan broker.ApprovalAnswer, 1)
			go func() { got <- d.wait(ctx, q, "c") }()
			synctest.Wait() // the call waits on the desk
			cancel()        // its wait ends (the timeout, the run's end) as the operator answers
			err := d.answer("ap", "h", broker.ApprovalAnswer{Decision: broker.ApprovalGranted, Channel: profiles.ChannelAdmin})
			ans := <-got
			if err == nil && ans.Decision != broker.ApprovalGranted {
				t.Fatalf("round %d: the desk took the approval (200) but the call got %q", i, ans.Decision)
			}
			if err != nil && ans.Decision != broker.ApprovalTimeout {
				t.Fatalf("round %d: %v, and the call got %q", i, err, ans.Decision)
			}
		})
	}
}
