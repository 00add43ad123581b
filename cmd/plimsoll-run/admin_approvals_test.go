package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/server"
)

// TestAdminApprovals approves and declines gated calls from the CLI, against an in-process
// daemon and a loopback upstream that records what reached it.
func TestAdminApprovals(t *testing.T) {
	rec := &recorder{}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "shop.yaml"), []byte("base_url: "+up.URL+"/v1\ncredential:\n  env: API_TOKEN\nroutes:\n  - POST /payments\n"+
		"approvals:\n  routes: [POST /payments]\n  channels: [admin]\n"), 0o644)
	apiAddr, adminAddr := inProcessDaemon(t, server.Config{ProfilesDir: dir,
		Getenv: func(k string) string { return map[string]string{"API_TOKEN": "sk-approvals"}[k] }})
	admin := func(args ...string) (int, string, string) {
		return invoke(t, "", nil, append(append([]string{"admin"}, args...), "--admin", adminAddr)...)
	}
	pay := func(cents int) <-chan string {
		out := make(chan string, 1)
		go func() {
			code := `const r = await api.post("/payments", {cents: ` + strings.Repeat("1", cents) + `}); return {status: r.status, error: r.status == 200 ? "" : JSON.parse(r.body).error}`
			b, _ := json.Marshal(map[string]string{"profile": "shop", "code": code})
			resp, err := http.Post("http://"+apiAddr+"/v1/runs", "application/json", strings.NewReader(string(b)))
			if err != nil {
				out <- err.Error()
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var a struct{ Output json.RawMessage }
			json.Unmarshal(body, &a)
			out <- string(a.Output)
		}()
		return out
	}
	waiting := func() server.PendingApproval {
		var q server.PendingApproval
		waitFor(t, func() bool {
			code, out, _ := admin("approvals", "--json")
			var a server.ApprovalsAnswer
			if code != 0 || json.Unmarshal([]byte(out), &a) != nil || len(a.Approvals) == 0 {
				return false
			}
			q = a.Approvals[0]
			return true
		}, "a pending approval")
		return q
	}

	if code, out, errs := admin("approvals"); code != 0 || out != "no calls wait for approval\n" {
		t.Fatalf("approvals with none: %d %q %s", code, out, errs)
	}
	result := pay(2)
	q := waiting()
	if want := broker.CallHash("POST", "/payments", "", http.Header{"Content-Type": {"application/json"}}, []byte(`{"cents":11}`)); q.Hash != want {
		t.Fatalf("hash %s, want %s", q.Hash, want)
	}
	code, out, errs := admin("approvals")
	if code != 0 || !strings.Contains(out, q.ID+"  POST /payments") || !strings.Contains(out, `{"cents":11}`) || !strings.Contains(out, "Content-Type: application/json") || !strings.Contains(out, q.Hash) {
		t.Fatalf("approvals: %d\n%s%s", code, out, errs)
	}
	if code, _, errs := admin("approve", q.ID, "--hash", strings.Repeat("0", 64)); code != 1 || !strings.Contains(errs, "409 hash:") {
		t.Fatalf("approve with a wrong hash: %d %s", code, errs)
	}
	if len(rec.requests()) != 0 {
		t.Fatalf("the call left before its approval: %v", rec.requests())
	}
	code, out, errs = admin("approve", q.ID, "--by", "ops-ana")
	if code != 0 || !strings.Contains(out, q.Hash) || !strings.Contains(out, q.ID+" approved: the call leaves now") {
		t.Fatalf("approve: %d\n%s%s", code, out, errs)
	}
	if got := <-result; got != `{"status":200,"error":""}` {
		t.Fatalf("approved run: %s", got)
	}
	if r := rec.requests(); len(r) != 1 || !strings.HasPrefix(r[0], "POST /v1/payments ") {
		t.Fatalf("upstream saw %v", r)
	}
	if code, _, errs := admin("approve", q.ID); code != 1 || !strings.Contains(errs, "no pending approval") {
		t.Fatalf("approve twice: %d %s", code, errs)
	}

	result = pay(3)
	q = waiting()
	if code, out, errs := admin("decline", q.ID, "--reason", "not this month"); code != 0 || !strings.Contains(out, "declined: the tool gets 403 approval_declined") {
		t.Fatalf("decline: %d %s %s", code, out, errs)
	}
	if got := <-result; got != `{"status":403,"error":"approval_declined"}` {
		t.Fatalf("declined run: %s", got)
	}
	if len(rec.requests()) != 1 {
		t.Fatalf("a declined call reached the upstream: %v", rec.requests())
	}
	if code, _, errs := admin("approve"); code != 2 || !strings.Contains(errs, "an approval ID is required") {
		t.Fatalf("approve without ID: %d %s", code, errs)
	}
}
