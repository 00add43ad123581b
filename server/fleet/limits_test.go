package fleet_test

import (
	"time"

	"testing"

	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// now is the time the tests divide at; every member's heartbeat is a second old.
var now = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func member(instance string, stale bool, limits ...fleet.APILimit) fleet.Member {
	return fleet.Member{Beat: fleet.Beat{Replica: "r" + instance, Instance: instance, At: now.Add(-time.Second),
		Status: fleet.Status{Limits: limits}}, Stale: stale}
}

func knee(learned, demand int) fleet.APILimit {
	return fleet.APILimit{Profile: "knee", Learned: learned, Demand: demand}
}

func TestShareOf(t *testing.T) {
	own := knee(18, 30)
	for _, tc := range []struct {
		name    string
		members []fleet.Member
		want    bulkhead.Share
	}{
		{"alone: the whole limit", []fleet.Member{member("me", false, own)}, bulkhead.Share{}},
		{"equal demand: a third of the median",
			[]fleet.Member{member("me", false, own), member("b", false, knee(16, 30)), member("c", false, knee(20, 30))},
			bulkhead.Share{Fleet: 18, Fraction: 1.0 / 3}},
		{"a stale member counts for nothing",
			[]fleet.Member{member("b", false, knee(16, 30)), member("c", true, knee(20, 30))},
			bulkhead.Share{Fleet: 18, Fraction: 0.5}},
		{"a member without this API counts for nothing",
			[]fleet.Member{member("b", false, fleet.APILimit{Profile: "knee", Route: "GET /x", Learned: 4, Demand: 9})},
			bulkhead.Share{}},
		{"beside an idle replica: half equal, all the demand",
			[]fleet.Member{member("b", false, knee(16, 0))},
			bulkhead.Share{Fleet: 18, Fraction: (0.5 + 1) / 2}},
		{"more demand, more share: half equal, half by demand",
			[]fleet.Member{member("b", false, knee(18, 10))},
			bulkhead.Share{Fleet: 18, Fraction: (0.5 + 30.0/40) / 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fleet.ShareOf(tc.members, "me", own, now)
			if got.Fleet != tc.want.Fleet || diff(got.Fraction, tc.want.Fraction) > 1e-9 {
				t.Fatalf("ShareOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Its own demand is taken from its last heartbeat, as the others see it: the fractions add up.
func TestShareOfFractionsAddUp(t *testing.T) {
	ms := []fleet.Member{member("a", false, knee(18, 30)), member("b", false, knee(18, 10)), member("c", false, knee(18, 0))}
	sum := 0.0
	for _, self := range []string{"a", "b", "c"} {
		sum += fleet.ShareOf(ms, self, knee(18, 99), now).Fraction // a fresh demand differs from the beat's
	}
	if diff(sum, 1) > 1e-9 {
		t.Fatalf("fractions add up to %v", sum)
	}
}

// A member silent for more than ShareAfter counts for nothing, though not yet marked stale.
func TestShareOfDropsASilentMemberBeforeItIsStale(t *testing.T) {
	silent := member("b", false, knee(16, 30))
	silent.At = now.Add(-fleet.ShareAfter - time.Millisecond)
	if got := fleet.ShareOf([]fleet.Member{silent}, "me", knee(18, 30), now); got != (bulkhead.Share{}) {
		t.Fatalf("ShareOf with a silent member = %+v, want the whole limit", got)
	}
	silent.At = now.Add(-fleet.ShareAfter)
	if got := fleet.ShareOf([]fleet.Member{silent}, "me", knee(18, 30), now); got.Fraction != 0.5 {
		t.Fatalf("ShareOf with a member silent exactly ShareAfter = %+v, want half", got)
	}
}

func TestShareOfIdleFleetIsEqualParts(t *testing.T) {
	got := fleet.ShareOf([]fleet.Member{member("b", false, knee(16, 0)), member("c", false, knee(20, 0))}, "me", knee(18, 0), now)
	if got.Fleet != 18 || diff(got.Fraction, 1.0/3) > 1e-9 {
		t.Fatalf("ShareOf = %+v, want a third of 18", got)
	}
}

// A hostile bucket writer claims a huge demand and a huge limit: the share only shrinks, and
// the bulkhead never admits more than its own learned limit nor less than one call.
func TestShareOfHostileClaimsOnlyShrink(t *testing.T) {
	own := knee(18, 30)
	hostile := []fleet.Member{member("x", false, knee(1<<30, 1<<30)), member("y", false, knee(1<<30, 1<<30))}
	s := fleet.ShareOf(hostile, "me", own, now)
	b, err := bulkhead.New(bulkhead.Config{Algorithm: bulkhead.Fixed, Initial: 18})
	if err != nil {
		t.Fatal(err)
	}
	b.SetShare(s, time.Now())
	if got := b.Snapshot().Limit; got < 1 || got > 18 {
		t.Fatalf("limit under hostile claims = %d (share %+v), want 1..18", got, s)
	}
	lying := []fleet.Member{member("x", false, knee(-5, -7))} // negative claims are taken as nothing
	if s := fleet.ShareOf(lying, "me", own, now); s.Fraction <= 0 || s.Fraction > 1 || s.Fleet < 1 {
		t.Fatalf("ShareOf with negative claims = %+v", s)
	}
}

func diff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}

// FuzzShareOf: whatever the other members claim, a replica's fraction stays in (0, 1], and the
// bulkhead admits from one call to its own learned limit.
func FuzzShareOf(f *testing.F) {
	f.Add(18, 30, 16, 30, 20, 30, false)
	f.Add(18, 30, 1<<30, 1<<30, -5, -7, false)
	f.Add(1, 0, 0, 0, 0, 0, true)
	f.Fuzz(func(t *testing.T, learned, demand, l1, d1, l2, d2 int, stale bool) {
		if learned < 1 || learned > bulkhead.MaxLimit || demand < 0 {
			t.Skip() // own numbers come from its own bulkhead
		}
		own := knee(learned, demand)
		s := fleet.ShareOf([]fleet.Member{member("x", false, knee(l1, d1)), member("y", stale, knee(l2, d2))}, "me", own, now)
		if s.Fraction <= 0 || s.Fraction > 1 {
			t.Fatalf("fraction %v out of (0, 1]", s.Fraction)
		}
		b, err := bulkhead.New(bulkhead.Config{Algorithm: bulkhead.Fixed, Initial: learned})
		if err != nil {
			t.Fatal(err)
		}
		b.SetShare(s, time.Now())
		if got := b.Snapshot().Limit; got < 1 || got > learned {
			t.Fatalf("admits %d with its own limit %d (share %+v)", got, learned, s)
		}
	})
}
