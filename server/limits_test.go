package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/server"
	"github.com/plimsoll/plimsoll/server/runqueue"
)

// withLimitedProfile adds the profile "limited": one call in flight to the API, no queue.
func withLimitedProfile(up *upstream) option {
	return func(c *server.Config) {
		body := "base_url: " + up.URL + "/api\ncredential:\n  env: UPSTREAM_TOKEN\n  scheme: Bearer\nroutes:\n  - GET /*\n" +
			"concurrency:\n  limit: 1\n  max_queue: 0\n"
		os.WriteFile(filepath.Join(c.ProfilesDir, "limited.yaml"), []byte(body), 0o644)
	}
}

type limitsAnswer struct {
	Limits []struct {
		Profile   string            `json:"profile"`
		Route     string            `json:"route"`
		Algorithm string            `json:"algorithm"`
		Limit     int               `json:"limit"`
		InFlight  int               `json:"in_flight"`
		Queued    int               `json:"queued"`
		Shed      map[string]uint64 `json:"shed"`
		Retuned   bool              `json:"retuned"`
	} `json:"limits"`
}

const statusTool = `const r = await api.get("/block"); return [r.status, r.headers["retry-after"] ?? null];`

// TestAPILimitOnTheDaemon drives the limit over HTTP: a critical run holds the profile's only
// slot; a sheddable run's call is shed (503 + Retry-After to the tool, shed on the audit line,
// the limit named on the trace); the admin plane and the metrics show the same numbers; a retune
// raises the limit live and a third run's call goes through; bad retunes are refused by field.
func TestAPILimitOnTheDaemon(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, withLimitedProfile(up))

	var wg sync.WaitGroup
	wg.Go(func() {
		resp, b := d.do("POST", "/v1/runs", tokenB, run("limited", statusTool), "Plimsoll-Criticality", "critical")
		if resp.StatusCode != 200 || string(decode[answer](t, b).Output) != `[200,null]` {
			t.Errorf("the holding run: %d %s", resp.StatusCode, b)
		}
	})
	up.waitArrived(t, 1)

	resp, b := d.do("POST", "/v1/runs", tokenB, run("limited", statusTool), "Plimsoll-Criticality", "sheddable")
	if resp.StatusCode != 200 {
		t.Fatalf("shed run: %d %s", resp.StatusCode, b)
	}
	a := decode[answer](t, b)
	if string(a.Output) != `[503,"1"]` {
		t.Fatalf("the tool saw %s, want a 503 with Retry-After 1", a.Output)
	}
	if a.Audit["host_calls_shed"] != 1.0 || a.Audit["breaker_opens"] != 0.0 || a.Audit["host_calls_forwarded"] != 0.0 {
		t.Fatalf("audit: %v", a.Audit)
	}
	var entry struct{ Outcome, Reason string }
	json.Unmarshal(a.Trace[0], &entry)
	if entry.Outcome != "shed" || entry.Reason != "API limit: 1 in flight at limit 1 and the queue is full (0 queued)" {
		t.Fatalf("trace: %+v", entry)
	}

	_, b = d.send(d.admin, "GET", "/admin/limits", "", nil)
	lim := decode[limitsAnswer](t, b)
	if len(lim.Limits) != 1 || lim.Limits[0].Profile != "limited" || lim.Limits[0].Limit != 1 ||
		lim.Limits[0].InFlight != 1 || lim.Limits[0].Shed["sheddable"] != 1 || lim.Limits[0].Shed["critical"] != 0 {
		t.Fatalf("GET /admin/limits: %s", b)
	}
	_, m := d.send(d.admin, "GET", "/metrics", "", nil)
	for _, want := range []string{
		`plimsoll_api_limit{profile="limited",route=""} 1`,
		`plimsoll_api_in_flight{profile="limited",route=""} 1`,
		`plimsoll_api_shed_total{criticality="sheddable",profile="limited",route=""} 1`,
		`plimsoll_api_shed_total{criticality="critical",profile="limited",route=""} 0`,
	} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	for _, tc := range []struct {
		profile, body string
		code          int
		field         string
	}{
		{"limited", `{"min": 1}`, 400, "min"},
		{"limited", `{"max": 3}`, 400, "max"},
		{"limited", `{"limit": "vegas"}`, 400, "limit"},
		{"limited", `{"limit": 0}`, 400, "limit"},
		{"limited", `{"queue_timeout": "soon"}`, 400, "queue_timeout"},
		{"limited", `{"limits": 3}`, 400, "body"},
		{"petstore", `{"limit": 3}`, 409, "profile"},
	} {
		resp, b := d.send(d.admin, "POST", "/admin/limits/"+tc.profile+"/retune", "", tc.body)
		got := decode[map[string]any](t, b)
		if resp.StatusCode != tc.code || got["field"] != tc.field {
			t.Errorf("retune %s %s: %d %s, want %d naming %s", tc.profile, tc.body, resp.StatusCode, b, tc.code, tc.field)
		}
	}

	_, b = d.send(d.admin, "GET", "/admin/limits", "", nil)
	if lim := decode[limitsAnswer](t, b); lim.Limits[0].Retuned || lim.Limits[0].Limit != 1 {
		t.Fatalf("a refused retune changed something: %s", b)
	}
	resp, b = d.send(d.admin, "POST", "/admin/limits/limited/retune", "", `{"limit": 2}`)
	lim = decode[limitsAnswer](t, b)
	if resp.StatusCode != 200 || lim.Limits[0].Limit != 2 || !lim.Limits[0].Retuned {
		t.Fatalf("retune to 2: %d %s", resp.StatusCode, b)
	}
	wg.Go(func() {
		_, b := d.do("POST", "/v1/runs", tokenB, run("limited", statusTool))
		if out := string(decode[answer](t, b).Output); out != `[200,null]` {
			t.Errorf("after the retune: %s", b)
		}
	})
	up.waitArrived(t, 2) // the second slot let the third run's call through
	up.open()
	wg.Wait()
}

// TestForceOpenRoute: the operator forces one route pattern open; that route's calls are shed
// (the operator's reason on the trace), the profile's other routes go on, a route the profile
// does not grant is refused by name, and clearing it lets the calls through again.
func TestForceOpenRoute(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	const tool = `const a = await api.get("/pets/1"); const b = await api.get("/x"); return [a.status, b.status];`
	force := func(method, body string) (int, map[string]any) {
		resp, b := d.send(d.admin, method, "/admin/profiles/petstore/routes/force-open", "", body)
		return resp.StatusCode, decode[map[string]any](t, b)
	}
	code, got := force("POST", `{"route": "GET /pets/*", "reason": "INC-12 pets"}`)
	if code != 200 || got["route"] != "GET /pets/*" {
		t.Fatalf("force-open: %d %v", code, got)
	}
	_, b := d.do("POST", "/v1/runs", tokenA, run("petstore", tool))
	a := decode[answer](t, b)
	var first struct{ Reason string }
	json.Unmarshal(a.Trace[0], &first)
	if string(a.Output) != `[503,200]` || first.Reason != "forced open by the operator on route GET /pets/*: INC-12 pets" {
		t.Fatalf("forced route: %s %s", a.Output, first.Reason)
	}
	if code, got := force("POST", `{"route": "DELETE /pets/*", "reason": "x"}`); code != 400 || got["field"] != "route" {
		t.Fatalf("an ungranted route: %d %v", code, got)
	}
	if code, got := force("POST", `{"route": "GET /pets/*"}`); code != 400 || got["field"] != "reason" {
		t.Fatalf("no reason: %d %v", code, got)
	}
	if code, got := force("DELETE", `{"route": "GET /pets/*"}`); code != 200 || got["cleared"] == nil {
		t.Fatalf("clear: %d %v", code, got)
	}
	_, b = d.do("POST", "/v1/runs", tokenA, run("petstore", tool))
	if out := string(decode[answer](t, b).Output); out != `[200,200]` {
		t.Fatalf("after clearing: %s", out)
	}
}

// One vocabulary of criticality: what the daemon's queue reads (admission) and what the API
// limit reads (bulkhead; plimsoll-run mcp on stdio parses _meta with it) accept and refuse alike,
// so a value the daemon refuses is not taken on stdio, nor the other way round.
func TestCriticalityVocabularyIsOne(t *testing.T) {
	for _, in := range []string{"", "normal", "critical", "sheddable", "Critical", " sheddable ", "best_effort", "best-effort", "low", "default", "urgent"} {
		_, errQueue := runqueue.ParseCriticality(in)
		tier, errLimit := bulkhead.ParseTier(in)
		if (errQueue == nil) != (errLimit == nil) {
			t.Errorf("%q: the queue says %v, the API limit %v (%s)", in, errQueue, errLimit, tier)
		}
		if errLimit != nil && !strings.Contains(errLimit.Error(), errQueue.Error()) {
			t.Errorf("%q: the API limit says %q, the queue %q", in, errLimit, errQueue)
		}
	}
}

// A force-open of a route the profile does not grant names the route and some of those it does,
// not all of them: a generated profile grants hundreds.
func TestForceOpenRouteRefusalStaysShort(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up)
	var routes strings.Builder
	for i := range 40 {
		fmt.Fprintf(&routes, "  - GET /r%d\n", i)
	}
	writeProfile(t, d.dir, "wide", up.URL, routes.String())
	if resp, b := d.send(d.admin, "POST", "/admin/reload", "", nil); resp.StatusCode != 200 {
		t.Fatalf("reload: %s", b)
	}
	resp, b := d.send(d.admin, "POST", "/admin/profiles/wide/routes/force-open", "", `{"route": "GET /nope", "reason": "x"}`)
	got := decode[map[string]any](t, b)
	if resp.StatusCode != 400 || got["field"] != "route" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	msg := got["error"].(string)
	if !strings.HasPrefix(msg, `"GET /nope" is not one of the profile's routes: GET /*, GET /pets/*, GET /r0,`) ||
		!strings.HasSuffix(msg, "and 32 more") || strings.Contains(msg, "GET /r39") {
		t.Fatalf("refusal: %s", msg)
	}
}
