package broker_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/profiles"
)

// An approver is any type with Approve; this one says yes to refunds under 50.00 and no to
// anything else. The broker asks it only about calls under the profile's approvals routes.
type refundDesk struct{}

func (refundDesk) Approve(_ context.Context, q broker.ApprovalRequest) broker.ApprovalAnswer {
	fmt.Printf("asked: %s %s %s\n", q.Method, q.Path, q.Summary)
	if q.Summary == `{"cents":1200}` {
		return broker.ApprovalAnswer{Decision: broker.ApprovalGranted, Channel: "desk", By: "ana"}
	}
	return broker.ApprovalAnswer{Decision: broker.ApprovalDeclined, Channel: "desk", By: "ana"}
}

func ExampleApprover() {
	p, _ := profiles.LoadFile(exampleProfile("base_url: http://api.test\nroutes: [POST /refunds]\napprovals: {routes: [POST /refunds]}\n"))
	api := rtFunc(func(*http.Request) (*http.Response, error) { return inMemReply(201, `{"ok":true}`), nil })
	run, _ := broker.New(broker.Config{Profile: p, Transport: api, Approver: refundDesk{}})

	small := run.Call(context.Background(), broker.Request{Method: "POST", Path: "/refunds", Body: []byte(`{ "cents": 1200 }`)})
	big := run.Call(context.Background(), broker.Request{Method: "POST", Path: "/refunds", Body: []byte(`{"cents": 990000}`)})
	fmt.Println(small.Status, big.Status, string(big.Body))
	a := run.Finish(broker.StatusOK, nil)
	fmt.Printf("granted %d, declined %d\n", a.Approvals.Granted, a.Approvals.Declined)
	// Output:
	// asked: POST /refunds {"cents":1200}
	// asked: POST /refunds {"cents":990000}
	// 201 403 {"error":"approval_declined","reason":"the call to POST /refunds needs a person's approval and did not get it"}
	// granted 1, declined 1
}

func ExampleSummarizeBody() {
	fmt.Println(broker.SummarizeBody([]byte(`{"to": "acme\u202e", "cents": 1200}`)))
	fmt.Println(broker.SummarizeBody([]byte("refund \x1b[8mhidden")))
	// Output:
	// {"cents":1200,"to":"acme\u202e"}
	// refund \u001b[8mhidden
}

// exampleProfile writes a profile to a temporary directory and returns its path.
func exampleProfile(yaml string) string {
	dir, _ := os.MkdirTemp("", "example")
	path := filepath.Join(dir, "shop.yaml")
	_ = os.WriteFile(path, []byte(yaml), 0o600)
	return path
}
