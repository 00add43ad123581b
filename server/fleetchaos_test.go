package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// natsOutage is how long NATS stays down under load (issue 27: "stop NATS for 10 s under load").
const natsOutage = 10 * time.Second

// loadRun does a few upstream calls, so each run is a real round trip through the broker.
var loadRun = run("inventory", `let n = 0; for (let i = 0; i < 3; i++) { const r = await api.get("/pets/" + i); if (r.status === 200) n++ } return n`)

// load submits runs to one replica back to back until stop is closed, counting what it sent and
// what came back answered; an unanswered run is kept as an error.
type load struct {
	d              *daemon
	sent, answered atomic.Int64
	mu             sync.Mutex
	errs           []string
}

func (l *load) loop(stop <-chan struct{}, done *sync.WaitGroup) {
	defer done.Done()
	body, _ := json.Marshal(loadRun)
	for {
		select {
		case <-stop:
			return
		default:
		}
		l.sent.Add(1)
		req, _ := http.NewRequest("POST", l.d.api+"/v1/runs", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tokenB)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			l.fail(err.Error())
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var a answer
		if resp.StatusCode != 200 || json.Unmarshal(b, &a) != nil || string(a.Output) != "3" {
			l.fail(resp.Status + " " + string(b))
			continue
		}
		l.answered.Add(1)
	}
}

func (l *load) fail(s string) { l.mu.Lock(); l.errs = append(l.errs, s); l.mu.Unlock() }

// metric reads d's plimsoll_fleet_degraded gauge line.
func fleetMetric(t *testing.T, d *daemon) string {
	_, m := d.adm("GET", "/metrics", "", nil)
	for _, l := range strings.Split(string(m), "\n") {
		if strings.HasPrefix(l, "plimsoll_fleet_degraded ") {
			return l
		}
	}
	t.Fatalf("replica %s metrics without plimsoll_fleet_degraded", d.api)
	return ""
}

// NATS stops for natsOutage while three replicas serve a steady stream of runs: every run is
// answered and audited once, the flags set before hold throughout, admin state and metrics say
// degraded during the outage and not after, and a clear made after the heal reaches everyone.
func TestFleetNATSOutageUnderLoad(t *testing.T) {
	store := t.TempDir()
	ns := natstest.At(t, store, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	up := newUpstream(t)
	reps := []*daemon{start(t, up, inFleet(ns, "a")), start(t, up, inFleet(ns, "b")), start(t, up, inFleet(ns, "c"))}
	if resp, body := reps[0].adm("POST", "/admin/profiles/petstore/force-open", "", map[string]any{"reason": "INC-7 pets down"}); resp.StatusCode != 200 {
		t.Fatalf("force-open: %d %s", resp.StatusCode, body)
	}
	probes := make([]int, len(reps)) // runs sent to each replica outside the load, to count its audit lines
	for i, d := range reps {
		eventually(t, func() bool { probes[i]++; return shed(t, d) }, "replica %s sheds petstore", d.api)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	loads := make([]*load, len(reps))
	for i, d := range reps {
		loads[i] = &load{d: d}
		wg.Add(1)
		go loads[i].loop(stop, &wg)
	}
	eventually(t, func() bool {
		return loads[0].answered.Load() > 0 && loads[1].answered.Load() > 0 && loads[2].answered.Load() > 0
	}, "load on every replica")

	down := time.Now()
	ns.Shutdown()
	for i, d := range reps {
		eventually(t, func() bool { return degraded(t, d) != "" }, "replica %s says degraded", d.api)
		if m := fleetMetric(t, d); m != "plimsoll_fleet_degraded 1" {
			t.Fatalf("replica %s during the outage: %s", d.api, m)
		}
		probes[i]++
		if !shed(t, d) {
			t.Fatalf("replica %s stopped enforcing the flag set before the outage", d.api)
		}
	}
	time.Sleep(time.Until(down.Add(natsOutage))) // the outage's length is the scenario, not a wait for a state
	for i, d := range reps {                     // still enforced at the outage's end
		probes[i]++
		if !shed(t, d) {
			t.Fatalf("replica %s stopped enforcing the flag late in the outage", d.api)
		}
		probes[i]++ // a run that forwards is served while NATS is still down: runs never wait on it
		if _, b := d.do("POST", "/v1/runs", tokenB, loadRun); string(decode[answer](t, b).Output) != "3" {
			t.Fatalf("replica %s did not forward a run during the outage: %s", d.api, b)
		}
	}
	during := make([]int64, len(reps))
	for i, l := range loads {
		during[i] = l.answered.Load()
	}

	natstest.At(t, store, port) // the same store: the bucket and its flags come back
	for _, d := range reps {
		eventually(t, func() bool { return degraded(t, d) == "" }, "replica %s healed", d.api)
		if m := fleetMetric(t, d); m != "plimsoll_fleet_degraded 0" {
			t.Fatalf("replica %s after the heal: %s", d.api, m)
		}
	}
	eventually(t, func() bool { return loads[0].answered.Load() > during[0] }, "runs answered after the heal")
	close(stop)
	wg.Wait()

	if resp, body := reps[1].adm("DELETE", "/admin/profiles/petstore/force-open", "", nil); resp.StatusCode != 200 {
		t.Fatalf("clear after the heal: %d %s", resp.StatusCode, body)
	}
	for i, d := range reps {
		eventually(t, func() bool { return d.adminState("petstore").ForcedOpen == nil }, "replica %s applies the clear", d.api)
		probes[i]++
		if shed(t, d) {
			t.Fatalf("replica %s still sheds after the clear", d.api)
		}
	}

	for i, d := range reps {
		l := loads[i]
		if len(l.errs) > 0 {
			t.Fatalf("replica %s: %d of %d runs not answered, first: %s", d.api, len(l.errs), l.sent.Load(), l.errs[0])
		}
		if err := d.shutdown(); err != nil { // drained: every audit line is written
			t.Fatal(err)
		}
		if got, want := len(auditLines(t, d.auditFile)), int(l.sent.Load())+probes[i]; got != want {
			t.Fatalf("replica %s: %d audit lines for %d runs", d.api, got, want)
		}
		t.Logf("replica %s: %d runs under load, all answered and audited", d.api, l.sent.Load())
	}
}

// proxy is a loopback TCP proxy in front of NATS for one replica: sever cuts that replica off
// (open connections closed, new ones refused) while the rest of the fleet stays connected.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.sever() })
	go p.serve()
	return p
}

func (p *proxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { io.Copy(u, c); u.Close(); c.Close() }()
		go func() { io.Copy(c, u); u.Close(); c.Close() }()
	}
}

func (p *proxy) sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() { p.mu.Lock(); p.cut = false; p.mu.Unlock() }

// One replica is cut off from NATS while the others stay connected: a clear made meanwhile is
// applied by the cut replica when it reconnects (the flag is not resurrected), and a force-open
// taken on the cut replica holds there only and says so.
func TestFleetOneReplicaCutOffDropsAFlagClearedMeanwhile(t *testing.T) {
	ns := natstest.Start(t)
	p := newProxy(t, ns.Addr().String())
	up := newUpstream(t)
	cutOff := start(t, up, func(c *server.Config) {
		c.Fleet = &fleet.Options{URL: p.url(), Name: "test", Replica: "cut"}
	})
	b, c := start(t, up, inFleet(ns, "b")), start(t, up, inFleet(ns, "c"))
	if resp, body := b.adm("POST", "/admin/profiles/petstore/force-open", "", map[string]any{"reason": "INC-7 pets down"}); resp.StatusCode != 200 {
		t.Fatalf("force-open: %d %s", resp.StatusCode, body)
	}
	eventually(t, func() bool { return shed(t, cutOff) }, "the replica to be cut sheds petstore")

	p.sever()
	eventually(t, func() bool { return degraded(t, cutOff) != "" }, "the cut replica says degraded")
	if degraded(t, b) != "" {
		t.Fatalf("replica b degraded by another replica's partition: %s", degraded(t, b))
	}
	if resp, body := b.adm("DELETE", "/admin/profiles/petstore/force-open", "", nil); resp.StatusCode != 200 {
		t.Fatalf("clear on b: %d %s", resp.StatusCode, body)
	}
	eventually(t, func() bool { return c.adminState("petstore").ForcedOpen == nil }, "c applies the clear")
	if !shed(t, cutOff) {
		t.Fatal("the cut replica dropped its last known flag before it could read the clear")
	}

	// An action on the cut replica: it holds there, the answer says it is local only, and it is
	// not queued for the heal (a late write could override actions taken since).
	resp, body := cutOff.adm("POST", "/admin/profiles/inventory/force-open", "", map[string]any{"reason": "INC-9 local"})
	if resp.StatusCode != 503 || !strings.Contains(string(body), "holds on this replica only") {
		t.Fatalf("force-open on the cut replica: %d %s", resp.StatusCode, body)
	}
	if f := cutOff.adminState("inventory").ForcedOpen; f == nil || f.Reason != "INC-9 local" {
		t.Fatalf("the cut replica does not hold its own action: %+v", f)
	}

	p.restore()
	eventually(t, func() bool { return degraded(t, cutOff) == "" }, "the cut replica healed")
	eventually(t, func() bool { return cutOff.adminState("petstore").ForcedOpen == nil }, "the cut replica drops the flag cleared meanwhile")
	if shed(t, cutOff) {
		t.Fatal("the cleared flag was resurrected on the cut replica")
	}
	for _, d := range []*daemon{b, c} {
		if d.adminState("petstore").ForcedOpen != nil {
			t.Fatalf("replica %s had the cleared flag resurrected", d.api)
		}
		if f := d.adminState("inventory").ForcedOpen; f != nil {
			t.Fatalf("replica %s got the cut replica's local action on the heal: %+v", d.api, f)
		}
	}
	if f := cutOff.adminState("inventory").ForcedOpen; f == nil {
		t.Fatal("the cut replica lost its local action on the heal")
	}
}
