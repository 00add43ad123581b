package broker_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// BenchmarkApprovalCost is what approvals add to a call (issue 28), all in one run of the
// benchmark so the ratios hold on a noisy machine: baseline is a forwarded POST under a profile
// with no approvals block; unmarked is the same call under a profile whose approvals mark another
// route (the cost every ungated call pays: one pattern match, no allocation); marked is the call
// gated and granted at once by an in-process approver (summary, hash, wait bookkeeping, trace).
func BenchmarkApprovalCost(b *testing.B) {
	rt := rtFunc(func(*http.Request) (*http.Response, error) {
		return inMemReply(201, `{"id":"p1"}`, "Content-Type", "application/json"), nil
	})
	now := approverFunc(func(context.Context, broker.ApprovalRequest) broker.ApprovalAnswer {
		return broker.ApprovalAnswer{Decision: broker.ApprovalGranted, Channel: "bench"}
	})
	routes := "routes: [GET /pets/*, POST /payments, DELETE /pets/*]\nbudget: {calls: 1000}\n"
	body := []byte(`{"to":"acme","cents":1200,"memo":"` + strings.Repeat("m", 200) + `"}`)
	for _, tc := range []struct{ name, approvals string }{
		{"baseline", ""},
		{"unmarked", "approvals: {routes: [DELETE /pets/*], max_per_run: 100}\n"},
		{"marked", "approvals: {routes: [POST /payments], max_per_run: 100}\n"},
	} {
		p := writeProfile(b, "http://api.test/v1", routes+tc.approvals)
		b.Run(tc.name, func(b *testing.B) {
			fresh := func() *broker.Broker {
				r, err := broker.New(broker.Config{Profile: p, Secret: profiles.NewSecret(secret), Transport: rt, Approver: now})
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
			run, calls, ctx := fresh(), 0, context.Background()
			req := broker.Request{Method: "POST", Path: "/payments", Headers: http.Header{"Content-Type": {"application/json"}}, Body: body}
			b.ReportAllocs()
			for b.Loop() {
				if calls++; calls > 100 {
					run, calls = fresh(), 1
				}
				if resp := run.Call(ctx, req); resp.Status != 201 {
					b.Fatal(resp.Status, string(resp.Body))
				}
			}
		})
	}
}
