package server_test

import (
	"net"
	"strings"
	"testing"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server"
	"github.com/plimsoll/plimsoll/server/fleet"
)

func inFleet(ns *natsserver.Server, replica string) option {
	return func(c *server.Config) {
		c.Fleet = &fleet.Options{URL: ns.ClientURL(), Name: "test", Replica: replica}
	}
}

// shed reports whether a new petstore run on d has its call shed by a forced-open flag.
func shed(t *testing.T, d *daemon) bool {
	_, b := d.do("POST", "/v1/runs", tokenB, run("petstore", `const r = await api.get("/pets/1"); return r.status`))
	a := decode[answer](t, b)
	return string(a.Output) == "503" && a.Audit["forced_open"] == "INC-7 pets down"
}

func TestFleetForceOpenReachesEveryReplica(t *testing.T) {
	ns := natstest.Start(t)
	up := newUpstream(t)
	a, b, c := start(t, up, inFleet(ns, "a")), start(t, up, inFleet(ns, "b")), start(t, up, inFleet(ns, "c"))

	resp, body := a.adm("POST", "/admin/profiles/petstore/force-open", "", map[string]any{"reason": "INC-7 pets down"}, "Plimsoll-Operator", "ana")
	if resp.StatusCode != 200 {
		t.Fatalf("force-open: %d %s", resp.StatusCode, body)
	}
	for _, d := range []*daemon{a, b, c} {
		eventually(t, func() bool { return shed(t, d) }, "replica %s sheds petstore", d.api)
		if p := d.adminState("petstore"); p.ForcedOpen == nil || p.ForcedOpen.Reason != "INC-7 pets down" {
			t.Fatalf("replica %s state: %+v", d.api, p)
		}
	}

	// Cleared on another replica: every replica forwards again.
	if resp, body := b.adm("DELETE", "/admin/profiles/petstore/force-open", "", nil); resp.StatusCode != 200 {
		t.Fatalf("clear: %d %s", resp.StatusCode, body)
	}
	for _, d := range []*daemon{a, b, c} {
		eventually(t, func() bool { return d.adminState("petstore").ForcedOpen == nil }, "replica %s cleared", d.api)
		if shed(t, d) {
			t.Fatalf("replica %s still sheds after the clear", d.api)
		}
	}
}

func TestFleetReplicaAppliesFlagsBeforeReady(t *testing.T) {
	ns := natstest.Start(t)
	up := newUpstream(t)
	a := start(t, up, inFleet(ns, "a"))
	c := start(t, up, inFleet(ns, "c"))
	if err := c.shutdown(); err != nil {
		t.Fatal(err)
	}
	// While c is down, a forces a route open; then c restarts.
	resp, body := a.adm("POST", "/admin/profiles/petstore/routes/force-open", "", map[string]any{"route": "GET /pets/*", "reason": "INC-8"})
	if resp.StatusCode != 200 {
		t.Fatalf("route force-open: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.adm("POST", "/admin/profiles/inventory/force-open", "", map[string]any{"reason": "INC-7 pets down"}); resp.StatusCode != 200 {
		t.Fatalf("force-open: %d %s", resp.StatusCode, body)
	}
	c2 := start(t, up, inFleet(ns, "c")) // returns once /readyz is 200: no polling for the flags after it
	if p := c2.adminState("inventory"); p.ForcedOpen == nil || p.ForcedOpen.Reason != "INC-7 pets down" {
		t.Fatalf("restarted replica was ready without the profile flag: %+v", p)
	}
	_, b := c2.do("POST", "/v1/runs", tokenB, run("petstore", `const r = await api.get("/pets/1"); return r.status`))
	if a := decode[answer](t, b); string(a.Output) != "503" || !strings.Contains(string(b), "INC-8") {
		t.Fatalf("restarted replica was ready without the route flag: %s", b)
	}
}

// degraded reads the fleet part of d's admin state.
func degraded(t *testing.T, d *daemon) string {
	resp, b := d.adm("GET", "/admin/state", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /admin/state: %d %s", resp.StatusCode, b)
	}
	st := decode[server.AdminState](t, b)
	if st.Fleet == nil {
		t.Fatalf("admin state without its fleet: %s", b)
	}
	return st.Fleet.Degraded
}

// NATS stops: replicas keep serving with the flags they had, stay ready and say degraded; when
// NATS returns they heal and a clear made afterwards reaches them.
func TestFleetPartitionKeepsFlagsAndHeals(t *testing.T) {
	store := t.TempDir()
	ns := natstest.At(t, store, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	up := newUpstream(t)
	a, b := start(t, up, inFleet(ns, "a")), start(t, up, inFleet(ns, "b"))
	if resp, body := a.adm("POST", "/admin/profiles/petstore/force-open", "", map[string]any{"reason": "INC-7 pets down"}); resp.StatusCode != 200 {
		t.Fatalf("force-open: %d %s", resp.StatusCode, body)
	}
	eventually(t, func() bool { return shed(t, b) }, "b sheds petstore")

	ns.Shutdown()
	for _, d := range []*daemon{a, b} {
		eventually(t, func() bool { return degraded(t, d) != "" }, "replica %s says degraded", d.api)
		if !shed(t, d) {
			t.Fatalf("replica %s lost its flag in the partition", d.api)
		}
		if d.status("GET", "/readyz", "", nil) != 200 {
			t.Fatalf("replica %s is not ready in the partition", d.api)
		}
		if _, m := d.adm("GET", "/metrics", "", nil); !strings.Contains(string(m), "plimsoll_fleet_degraded 1\n") {
			t.Fatalf("replica %s metrics do not say degraded", d.api)
		}
		_, body := d.do("POST", "/v1/runs", tokenB, run("inventory", `const r = await api.get("/pets/4"); return r.status`))
		if a := decode[answer](t, body); string(a.Output) != "200" {
			t.Fatalf("replica %s does not serve in the partition: %s", d.api, body)
		}
	}

	natstest.At(t, store, port)
	for _, d := range []*daemon{a, b} {
		eventually(t, func() bool { return degraded(t, d) == "" }, "replica %s healed", d.api)
	}
	// After the heal each lists the other live again from fresh heartbeats.
	eventually(t, func() bool {
		live := 0
		for _, m := range fleetOf(t, a).Replicas {
			if !m.Stale {
				live++
			}
		}
		return live == 2
	}, "a lists a and b live after the heal")
	if resp, body := b.adm("DELETE", "/admin/profiles/petstore/force-open", "", nil); resp.StatusCode != 200 {
		t.Fatalf("clear after the heal: %d %s", resp.StatusCode, body)
	}
	eventually(t, func() bool { return a.adminState("petstore").ForcedOpen == nil }, "a applies a clear made after the heal")
}

// fleetOf reads the fleet part of d's admin state.
func fleetOf(t *testing.T, d *daemon) server.FleetState {
	resp, b := d.adm("GET", "/admin/state", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /admin/state: %d %s", resp.StatusCode, b)
	}
	st := decode[server.AdminState](t, b)
	if st.Fleet == nil {
		t.Fatalf("admin state without its fleet: %s", b)
	}
	return *st.Fleet
}

// Every replica's admin state lists the fleet from heartbeats; one serving other profiles is
// marked; a reload asked on one replica is answered by every other.
func TestFleetStateListsReplicasAndReloadReachesThem(t *testing.T) {
	ns := natstest.Start(t)
	up := newUpstream(t)
	a, b, c := start(t, up, inFleet(ns, "a")), start(t, up, inFleet(ns, "b")), start(t, up, inFleet(ns, "c"))
	names := func(f server.FleetState) string {
		var s []string
		for _, m := range f.Replicas {
			if !m.Stale {
				s = append(s, m.Replica)
			}
		}
		return strings.Join(s, ",")
	}
	for _, d := range []*daemon{a, b, c} {
		eventually(t, func() bool { return names(fleetOf(t, d)) == "a,b,c" }, "replica %s lists a, b and c", d.api)
	}
	if f := fleetOf(t, a); f.Replicas[2].DigestDiffers || f.Warning != "" {
		t.Fatalf("replicas serving the same files: %+v", f)
	}

	writeProfile(t, c.dir, "petstore", up.URL, "description: changed on c only\n")
	resp, body := a.adm("POST", "/admin/reload", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("reload: %d %s", resp.StatusCode, body)
	}
	fr := decode[server.ReloadAnswer](t, body).Fleet
	if fr == nil || len(fr.Replicas) != 2 || len(fr.Missing) != 0 {
		t.Fatalf("reload on a was not answered by b and c: %s", body)
	}
	for _, r := range fr.Replicas {
		if want := r.Replica == "c"; r.Differs != want || (r.Digest == fr.Digest) == want {
			t.Fatalf("reload answer from %s: digest %s (a: %s) differs=%v: %s", r.Replica, r.Digest, fr.Digest, r.Differs, body)
		}
	}
	for _, d := range []*daemon{b, c} {
		if !strings.Contains(d.logs.String(), "reload asked by the fleet") {
			t.Fatalf("replica %s did not log the fleet's reload", d.api)
		}
	}
	eventually(t, func() bool { f := fleetOf(t, a); return f.Replicas[2].Replica == "c" && f.Replicas[2].DigestDiffers },
		"a's admin state marks c as serving another profile set")
}

// Two live replicas with one name: both warn, in admin state and in the log.
func TestFleetWarnsOfASharedReplicaName(t *testing.T) {
	ns := natstest.Start(t)
	up := newUpstream(t)
	a, twin := start(t, up, inFleet(ns, "a")), start(t, up, inFleet(ns, "a"))
	for _, d := range []*daemon{a, twin} {
		eventually(t, func() bool { return strings.Contains(fleetOf(t, d).Warning, `also named "a"`) }, "replica %s warns in admin state", d.api)
		eventually(t, func() bool { return strings.Contains(d.logs.String(), "another live replica uses this replica's name") }, "replica %s logs the shared name", d.api)
	}
}
