package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server/fleet"
)

func TestRosterMarksStaleDigestAndSharedName(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	own := fleet.Beat{Replica: "a", Instance: "1", At: t0, Status: fleet.Status{Digest: "d1"}}
	beats := []fleet.Beat{
		own,
		{Replica: "b", Instance: "2", At: t0.Add(-fleet.StaleAfter), Status: fleet.Status{Digest: "d2"}},                    // silent exactly 5 s: still live
		{Replica: "c", Instance: "3", At: t0.Add(-fleet.StaleAfter - time.Millisecond), Status: fleet.Status{Digest: "d1"}}, // just past: stale
		{Replica: "a", Instance: "4", At: t0.Add(-time.Second), Status: fleet.Status{Digest: "d1"}},                         // a second live "a"
		{Replica: "c", Instance: "5", At: t0.Add(-time.Hour), Status: fleet.Status{Digest: "d9"}},                           // a dead "c": not a shared name
	}
	got := fleet.Roster(beats, own, t0)
	type want struct {
		replica, instance          string
		stale, differs, nameShared bool
	}
	wants := []want{
		{"a", "1", false, false, true},
		{"a", "4", false, false, true},
		{"b", "2", false, true, false},
		{"c", "3", true, false, false},
		{"c", "5", true, false, false}, // a stale replica's digest is not held against it
	}
	if len(got) != len(wants) {
		t.Fatalf("roster has %d members, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		g := got[i]
		if g.Replica != w.replica || g.Instance != w.instance || g.Stale != w.stale || g.DigestDiffers != w.differs || g.NameShared != w.nameShared {
			t.Errorf("member %d = %s/%s stale=%v differs=%v shared=%v, want %+v", i, g.Replica, g.Instance, g.Stale, g.DigestDiffers, g.NameShared, w)
		}
	}
}

// eventually polls ok, bounded generously for a loaded machine.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !ok(); {
		if time.Now().After(end) {
			t.Fatalf("%s: not reached in 30 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEveryReplicaListsTheFleet(t *testing.T) {
	ns := natstest.Start(t)
	status := func(d string) func() fleet.Status {
		return func() fleet.Status { return fleet.Status{LiveRuns: 2, Digest: d} }
	}
	var fs []*fleet.Fleet
	for _, r := range []struct{ name, digest string }{{"a", "d1"}, {"b", "d1"}, {"c", "d2"}} {
		f, _ := join(t, ns, r.name)
		if err := f.Heartbeat(context.Background(), status(r.digest), t.Logf); err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	for i, f := range fs {
		eventually(t, "every replica lists a, b and c", func() bool {
			m := f.Members()
			return len(m) == 3 && m[0].Replica == "a" && m[1].Replica == "b" && m[2].Replica == "c" && m[2].LiveRuns == 2
		})
		m := f.Members()
		if differs := m[2].DigestDiffers; differs != (i < 2) {
			t.Errorf("replica %d: c (digest d2) marked differing = %v", i, differs)
		}
	}
	fs[2].Close() // a replica that leaves is dropped from the roster, not left stale
	eventually(t, "a drops c after c leaves", func() bool { return len(fs[0].Members()) == 2 })

	twin, _ := join(t, ns, "a")
	if err := twin.Heartbeat(context.Background(), status("d1"), t.Logf); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both a's see their name shared", func() bool { return fs[0].NameShared() && twin.NameShared() })
	if fs[1].NameShared() {
		t.Error("b says its name is shared")
	}
}
