package server_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server"
)

// fakeClock is the quota windows' injected clock, moved by the test.
type fakeClock struct{ t atomic.Int64 }

func newClock(t time.Time) *fakeClock { c := &fakeClock{}; c.set(t); return c }
func (c *fakeClock) set(t time.Time)  { c.t.Store(t.UnixNano()) }
func (c *fakeClock) now() time.Time   { return time.Unix(0, c.t.Load()).UTC() }

var minute0 = time.Date(2026, 12, 4, 14, 2, 0, 0, time.UTC)

// withQuotas gives agent-b (every profile) the quotas runs and calls per minute (0: none), on clk.
func withQuotas(runs, calls int, clk *fakeClock) option {
	return func(c *server.Config) {
		body := "clients:\n  - name: agent-a\n    token_env: A_TOKEN\n    profiles: [petstore]\n  - name: agent-b\n    token_file: b.token\n    profiles: [\"*\"]\n"
		if runs > 0 {
			body += fmt.Sprintf("    runs_per_minute: %d\n", runs)
		}
		if calls > 0 {
			body += fmt.Sprintf("    calls_per_minute: %d\n", calls)
		}
		if err := os.WriteFile(c.ClientsFile, []byte(body), 0o644); err != nil {
			panic(err)
		}
		c.QuotaNow = clk.now
	}
}

// quotaAnswer is a 429 for a run over its client's quota.
type quotaAnswer struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
	Quota  struct {
		Client      string    `json:"client"`
		Field       string    `json:"field"`
		Limit       int       `json:"limit"`
		Used        int       `json:"used"`
		WindowStart time.Time `json:"window_start"`
		WindowEnd   time.Time `json:"window_end"`
		Share       int       `json:"fleet_share"`
	} `json:"quota"`
}

func (d *daemon) state() server.AdminState {
	d.t.Helper()
	_, b := d.adm("GET", "/admin/state", "", nil)
	return decode[server.AdminState](d.t, b)
}

// runsUsage is agent-b's runs count in d's admin state: this replica's and the others'.
func (d *daemon) runsUsage() (local, others int) {
	st := d.state()
	if st.Quotas == nil {
		return -1, -1
	}
	for _, c := range st.Quotas.Clients {
		for _, u := range c.Usage {
			if c.Client == "agent-b" && u.Kind == "runs" {
				return u.Local, u.Others
			}
		}
	}
	return 0, 0
}

func TestRunsQuotaRefuses429WithRetryAfter(t *testing.T) {
	up := newUpstream(t)
	clk := newClock(minute0.Add(20 * time.Second))
	d := start(t, up, withQuotas(2, 0, clk))
	for i := range 2 {
		require.Equal(t, 200, d.status("POST", "/v1/runs", tokenB, run("inventory", "return 1")), "run %d", i+1)
	}
	resp, b := d.do("POST", "/v1/runs", tokenB, run("inventory", "return 1"))
	require.Equal(t, 429, resp.StatusCode, "%s", b)
	assert.Equal(t, "40", resp.Header.Get("Retry-After"), "seconds to the window's end")
	q := decode[quotaAnswer](t, b)
	assert.Equal(t, "agent-b", q.Quota.Client)
	assert.Equal(t, "runs_per_minute", q.Quota.Field)
	assert.Equal(t, 2, q.Quota.Limit)
	assert.Equal(t, 2, q.Quota.Used)
	assert.Equal(t, minute0, q.Quota.WindowStart)
	assert.Equal(t, minute0.Add(time.Minute), q.Quota.WindowEnd)
	assert.Contains(t, q.Error, "client agent-b is over its quota of 2 runs per minute")
	assert.Zero(t, q.Quota.Share, "no fleet, no share")

	assert.Equal(t, 200, d.status("POST", "/v1/runs", tokenA, run("petstore", "return 1")), "agent-a has no quota")
	assert.Len(t, auditLines(t, d.auditFile), 3, "a refused run is not a run: no audit line (refusal.go)")

	_, m := d.adm("GET", "/metrics", "", nil)
	assert.Contains(t, string(m), `plimsoll_client_quota_refusals_total{client="agent-b",kind="runs"} 1`)
	_, pub := d.do("GET", "/metrics", "", nil)
	assert.Contains(t, string(pub), `plimsoll_refusals_total{reason="quota",surface="v1"} 1`)

	st := d.state()
	require.NotNil(t, st.Quotas)
	require.Len(t, st.Quotas.Clients, 1, "only clients with a quota are shown")
	c := st.Quotas.Clients[0]
	assert.Equal(t, "agent-b", c.Client)
	assert.Equal(t, 2, c.RunsPerMinute)
	require.Len(t, c.Usage, 1)
	assert.Equal(t, 2, c.Usage[0].Local, "the refused run is not counted")

	clk.set(minute0.Add(time.Minute))
	assert.Equal(t, 200, d.status("POST", "/v1/runs", tokenB, run("inventory", "return 1")), "a new window")
}

// A run refused after its quota passed it (busy: the one slot is held and nothing queues) never
// ran, so it does not count: the client still has its second run of the window, on /v1 and MCP.
func TestARunRefusedAsBusyIsGivenBack(t *testing.T) {
	up := newUpstream(t)
	clk := newClock(minute0.Add(20 * time.Second))
	d := start(t, up, withQuotas(2, 0, clk), func(c *server.Config) { c.MaxRuns, c.Queue = 1, -1 })
	held := d.runAsync(tokenB, run("petstore", `return (await api.get("/block")).json()`))
	up.waitArrived(t, 1)

	resp, b := d.do("POST", "/v1/runs", tokenB, run("inventory", "return 1"))
	require.Equal(t, 429, resp.StatusCode, "%s", b)
	assert.Contains(t, string(b), "run queue is full", "refused for the slot, not the quota")
	cs, _ := connectMCP(t, d, tokenB, "agent-b-mcp")
	res, _ := callTool(t, cs, "run_inventory", "return 1", nil)
	require.True(t, res.IsError, "the MCP call is refused as busy too")
	assert.Contains(t, text(res), "busy")
	assert.Equal(t, 1, d.state().Quotas.Clients[0].Usage[0].Local, "only the held run counts")

	up.open()
	require.Equal(t, "ok", (<-held).Status)
	assert.Equal(t, 200, d.status("POST", "/v1/runs", tokenB, run("inventory", "return 1")), "the second run of the window")
	resp, b = d.do("POST", "/v1/runs", tokenB, run("inventory", "return 1"))
	assert.Equal(t, 429, resp.StatusCode, "the third is over the quota: %s", b)
	assert.Contains(t, string(b), "over its quota of 2 runs")
}

// TestCallsQuotaIsAnsweredByTheBroker: a call over the client's calls quota gets the guest a 429
// naming the quota, counted as over_budget on the trace and audit line; the upstream sees none.
func TestCallsQuotaIsAnsweredByTheBroker(t *testing.T) {
	up := newUpstream(t)
	clk := newClock(minute0)
	d := start(t, up, withQuotas(0, 3, clk))
	code := `const out = []; for (let i = 0; i < 5; i++) { const r = await api.get("/pets/1"); out.push(r.status === 429 ? [r.outcome, r.reason, r.headers["retry-after"]] : r.status) } return out`
	_, b := d.do("POST", "/v1/runs", tokenB, run("petstore", code))
	a := decode[answer](t, b)
	var out []any
	require.NoError(t, json.Unmarshal(a.Output, &out), "%s", b)
	require.Len(t, out, 5, "%s", b)
	assert.Equal(t, []any{200.0, 200.0, 200.0}, out[:3])
	refusal := fmt.Sprint(out[3])
	for _, want := range []string{"over_budget", "client agent-b is over its quota of 3 calls per minute", " 60]"} {
		assert.Contains(t, refusal, want, "the guest's answer names the outcome, the quota and Retry-After")
	}
	assert.Equal(t, 3.0, a.Audit["host_calls_forwarded"])
	assert.Equal(t, 2.0, a.Audit["host_calls_over_budget"])
	assert.Contains(t, string(a.Trace[3]), `"outcome":"over_budget"`)

	// The quota spans runs: the next run's first call is refused too.
	_, b = d.do("POST", "/v1/runs", tokenB, run("petstore", `return (await api.get("/pets/2")).status`))
	a = decode[answer](t, b)
	assert.Equal(t, "429", string(a.Output))
	assert.Equal(t, 0.0, a.Audit["host_calls_forwarded"])
	assert.Len(t, auditLines(t, d.auditFile), 2, "each run writes its one audit line")
	_, m := d.adm("GET", "/metrics", "", nil)
	assert.Contains(t, string(m), `plimsoll_client_quota_refusals_total{client="agent-b",kind="calls"} 3`)
}

// TestReloadChangesAQuota: a quota added by POST /admin/reload holds from the next run, and the
// reload names the client changed.
func TestReloadChangesAQuota(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, withQuotas(0, 0, newClock(minute0)))
	require.Equal(t, 200, d.status("POST", "/v1/runs", tokenB, run("inventory", "return 1")))
	assert.Nil(t, d.state().Quotas, "no client has a quota yet")
	cfg := server.Config{ClientsFile: filepath.Join(filepath.Dir(d.dir), "clients.yaml")}
	withQuotas(2, 0, newClock(minute0))(&cfg)
	resp, b := d.adm("POST", "/admin/reload", "", nil)
	require.Equal(t, 200, resp.StatusCode, "%s", b)
	assert.Contains(t, string(b), `"changed":["agent-b"]`)
	for i := range 2 {
		require.Equal(t, 200, d.status("POST", "/v1/runs", tokenB, run("inventory", "return 1")),
			"run %d after the reload: the run before it was not counted (no quota then)", i+1)
	}
	assert.Equal(t, 429, d.status("POST", "/v1/runs", tokenB, run("inventory", "return 1")))
}

func TestRunsQuotaRefusesAnMCPToolCall(t *testing.T) {
	up := newUpstream(t)
	d := start(t, up, withQuotas(1, 0, newClock(minute0.Add(45*time.Second))))
	cs, _ := connectMCP(t, d, tokenB, "agent-b-mcp")
	res, _ := callTool(t, cs, "run_inventory", "return 1", nil)
	require.False(t, res.IsError, text(res))
	res, out := callTool(t, cs, "run_inventory", "return 1", nil)
	require.True(t, res.IsError)
	for _, want := range []string{"client agent-b is over its quota of 1 runs per minute", "14:02:00–14:03:00 UTC", "retry in 15s"} {
		assert.Contains(t, text(res), want)
	}
	assert.Empty(t, out.RunID, "a refused call is not a run")
	assert.Len(t, auditLines(t, d.auditFile), 1)
}

// TestFleetQuotaIsSharedAcrossReplicas: three daemons on one NATS; a client's runs on one
// replica count against its quota on the others once synced, and with NATS gone each replica
// admits its share of the quota alone.
func TestFleetQuotaIsSharedAcrossReplicas(t *testing.T) {
	store := t.TempDir()
	ns := natstest.At(t, store, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	up := newUpstream(t)
	clk := newClock(minute0)
	opts := func(name string) []option {
		return []option{inFleet(ns, name), withQuotas(6, 0, clk), func(c *server.Config) { c.QuotaSync = 20 * time.Millisecond }}
	}
	a, b, c := start(t, up, opts("a")...), start(t, up, opts("b")...), start(t, up, opts("c")...)
	for i := range 4 {
		require.Equal(t, 200, a.status("POST", "/v1/runs", tokenB, run("inventory", "return 1")), "run %d on a", i+1)
	}
	for _, d := range []*daemon{b, c} {
		eventually(t, func() bool { _, o := d.runsUsage(); return o == 4 }, "replica %s sees a's 4 runs", d.api)
	}
	require.Equal(t, 200, b.status("POST", "/v1/runs", tokenB, run("inventory", "return 1")))
	require.Equal(t, 200, c.status("POST", "/v1/runs", tokenB, run("inventory", "return 1")))
	eventually(t, func() bool { _, o := a.runsUsage(); return o == 2 }, "a sees b's and c's runs")
	for _, d := range []*daemon{a, b, c} {
		eventually(t, func() bool { l, o := d.runsUsage(); return l+o == 6 }, "replica %s sees the fleet's 6 runs", d.api)
		resp, body := d.do("POST", "/v1/runs", tokenB, run("inventory", "return 1"))
		require.Equal(t, 429, resp.StatusCode, "replica %s: %s", d.api, body)
		assert.Equal(t, 6, decode[quotaAnswer](t, body).Quota.Used)
	}

	// NATS goes away: each replica admits ceil(6/3) = 2 runs of a new window on its own count.
	ns.Shutdown()
	for _, d := range []*daemon{a, b, c} {
		eventually(t, func() bool { st := d.state(); return st.Quotas != nil && st.Quotas.FleetShare == 3 }, "replica %s splits the quota", d.api)
	}
	clk.set(minute0.Add(time.Minute))
	total := 0
	for _, d := range []*daemon{a, b, c} {
		for range 3 {
			resp, body := d.do("POST", "/v1/runs", tokenB, run("inventory", "return 1"))
			if resp.StatusCode == 200 {
				total++
				continue
			}
			require.Equal(t, 429, resp.StatusCode, "%s", body)
			assert.Equal(t, 3, decode[quotaAnswer](t, body).Quota.Share)
			assert.True(t, strings.Contains(string(body), "the fleet is unreachable"), "%s", body)
		}
	}
	assert.Equal(t, 6, total, "the partitioned fleet admits its quota, split three ways")

	// NATS is back: the whole quota is shared again.
	natstest.At(t, store, port)
	for _, d := range []*daemon{a, b, c} {
		eventually(t, func() bool { st := d.state(); return st.Quotas != nil && st.Quotas.FleetShare == 0 }, "replica %s shares the quota again", d.api)
	}
	eventually(t, func() bool { l, o := a.runsUsage(); return l+o == 6 }, "a sees the fleet's 6 runs of the window after the heal")
	assert.Equal(t, 429, a.status("POST", "/v1/runs", tokenB, run("inventory", "return 1")))

	// A burst on all three at once in a new window: each replica admits only units it reserved
	// from the fleet, so the fleet admits exactly the quota; every admitted run is counted
	// fleet-wide and every replica refuses the next.
	clk.set(minute0.Add(2 * time.Minute))
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for _, d := range []*daemon{a, b, c} {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					resp, _ := d.send(d.api, "POST", "/v1/runs", tokenB, run("inventory", "return 1"))
					if resp.StatusCode != 200 {
						return
					}
					admitted.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	burst := int(admitted.Load())
	require.Equal(t, 6, burst, "nine concurrent clients on three replicas against a quota of 6")
	for _, d := range []*daemon{a, b, c} {
		eventually(t, func() bool { l, o := d.runsUsage(); return l+o == burst }, "replica %s counts the burst's %d runs", d.api, burst)
		assert.Equal(t, 429, d.status("POST", "/v1/runs", tokenB, run("inventory", "return 1")))
	}
}
