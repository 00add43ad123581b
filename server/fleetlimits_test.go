package server_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// withFixedProfile adds the profile "shared": a fixed limit of 12 calls in flight to up's API.
func withFixedProfile(up *upstream) option {
	return func(c *server.Config) {
		body := "base_url: " + up.URL + "/api\ncredential:\n  env: UPSTREAM_TOKEN\n  scheme: Bearer\nroutes:\n  - GET /*\n" +
			"concurrency:\n  limit: 12\n  max_queue: 8\n"
		os.WriteFile(filepath.Join(c.ProfilesDir, "shared.yaml"), []byte(body), 0o644)
	}
}

// limitOf reads d's limit of the profile "shared" from GET /admin/limits (0 before its first call).
func limitOf(t *testing.T, d *daemon) (limit int, share float64) {
	resp, b := d.adm("GET", "/admin/limits?profile=shared", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /admin/limits: %d %s", resp.StatusCode, b)
	}
	la := decode[server.LimitsAnswer](t, b)
	if len(la.Limits) != 1 {
		return 0, 0
	}
	return la.Limits[0].Limit, la.Limits[0].Share
}

// Three replicas of one fleet share the API's limit of 12: four each while idle; a replica that
// leaves drops out of the share (six each); with NATS gone the survivors fall back to their own
// limit of 12, say so in admin state and metrics, and share again once it is back.
func TestFleetSharesTheAPILimit(t *testing.T) {
	store := t.TempDir()
	ns := natstest.At(t, store, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	up := newUpstream(t)
	var ds []*daemon
	for _, name := range []string{"a", "b", "c"} {
		d := start(t, up, inFleet(ns, name), withFixedProfile(up))
		ds = append(ds, d)
		_, b := d.do("POST", "/v1/runs", tokenB, run("shared", `return (await api.get("/x")).status`))
		if a := decode[answer](t, b); string(a.Output) != "200" {
			t.Fatalf("first call on %s: %s", name, b) // the first call makes the limit
		}
	}
	for _, d := range ds {
		eventually(t, func() bool { l, _ := limitOf(t, d); return l == 4 }, "replica %s admits a third of 12", d.api)
		if _, s := limitOf(t, d); s < 0.33 || s > 0.34 {
			t.Fatalf("replica %s share = %v, want a third", d.api, s)
		}
	}
	f := fleetOf(t, ds[0])
	for _, m := range f.Replicas {
		if len(m.Limits) != 1 || m.Limits[0] != (fleet.APILimit{Profile: "shared", Learned: 12}) {
			t.Fatalf("replica %s's heartbeat carries limits %+v", m.Replica, m.Limits)
		}
	}

	if err := ds[2].shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds[:2] {
		eventually(t, func() bool { l, _ := limitOf(t, d); return l == 6 }, "replica %s admits half of 12 once c left", d.api)
	}

	ns.Shutdown()
	for _, d := range ds[:2] {
		eventually(t, func() bool { l, s := limitOf(t, d); return l == 12 && s == 0 }, "replica %s falls back to its own limit", d.api)
		if degraded(t, d) == "" {
			t.Fatalf("replica %s on its own limit without saying the fleet is degraded", d.api)
		}
		_, m := d.adm("GET", "/metrics", "", nil)
		if !strings.Contains(string(m), `plimsoll_api_limit_share{profile="shared",route=""} 1`) {
			t.Fatalf("replica %s metrics do not show the whole share:\n%s", d.api, grepLines(string(m), "plimsoll_api_limit"))
		}
	}
	natstest.At(t, store, port)
	for _, d := range ds[:2] {
		eventually(t, func() bool { l, _ := limitOf(t, d); return l == 6 && degraded(t, d) == "" }, "replica %s shares again", d.api)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// breakerAPI answers /api/down 503 (Retry-After 60, clamped to the cooldown cap of 30 s) once /api/hold holds a call, and holds
// /api/hold until released: a run keeps its open window alive while it waits.
func breakerAPI(t *testing.T) (url string, release func()) {
	held, done := make(chan struct{}), make(chan struct{})
	var once, heldOnce sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/hold":
			heldOnce.Do(func() { close(held) })
			select {
			case <-done:
			case <-r.Context().Done():
			}
		case "/api/down":
			<-held
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	release = func() { once.Do(func() { close(done) }) }
	t.Cleanup(func() { release(); srv.Close() })
	return srv.URL, release
}

// A breaker window open on replica b shows in every replica's admin state, under b, with its
// state, runs, opening and end; it is gone from there once b's run ends.
func TestFleetStateShowsEachReplicasBreakerWindows(t *testing.T) {
	ns := natstest.Start(t)
	up := newUpstream(t)
	down, release := breakerAPI(t)
	withDown := func(c *server.Config) { writeProfile(t, c.ProfilesDir, "flaky", down, "") }
	a, b, c := start(t, up, inFleet(ns, "a"), withDown), start(t, up, inFleet(ns, "b"), withDown), start(t, up, inFleet(ns, "c"), withDown)

	var wg sync.WaitGroup
	wg.Go(func() {
		_, body := b.do("POST", "/v1/runs", tokenB, run("flaky",
			`const h = api.get("/hold"); const d = await api.get("/down"); return [d.status, (await h).status];`))
		if a := decode[answer](t, body); string(a.Output) != "[503,200]" {
			t.Errorf("the run on b: %s", body)
		}
	})
	windowOfB := func(d *daemon) []fleet.Window {
		for _, m := range fleetOf(t, d).Replicas {
			if m.Replica == "b" {
				return m.Windows
			}
		}
		return nil
	}
	for _, d := range []*daemon{a, b, c} {
		eventually(t, func() bool { return len(windowOfB(d)) == 1 }, "replica %s shows b's window", d.api)
		w := windowOfB(d)[0]
		if w.Profile != "flaky" || w.State != "open" || w.Runs != 1 || w.OpenedAt.IsZero() || w.Until.Sub(w.OpenedAt) < 20*time.Second {
			t.Fatalf("replica %s shows b's window as %+v", d.api, w)
		}
	}
	for _, m := range fleetOf(t, a).Replicas {
		if m.Replica != "b" && len(m.Windows) != 0 {
			t.Fatalf("replica %s shows windows it does not have: %+v", m.Replica, m.Windows)
		}
	}
	release()
	wg.Wait()
	eventually(t, func() bool { return len(windowOfB(a)) == 0 }, "b's window gone once its run ended")
}
