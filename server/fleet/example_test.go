package fleet_test

import (
	"fmt"
	"time"

	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// Roster marks a replica silent for more than five seconds stale, and one serving other
// profiles than the asking replica.
func ExampleRoster() {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	own := fleet.Beat{Replica: "r1", Instance: "i1", At: now, Status: fleet.Status{Digest: "sha256:aa"}}
	beats := []fleet.Beat{
		own,
		{Replica: "r2", Instance: "i2", At: now.Add(-time.Second), Status: fleet.Status{Digest: "sha256:bb"}},
		{Replica: "r3", Instance: "i3", At: now.Add(-6 * time.Second), Status: fleet.Status{Digest: "sha256:aa"}},
	}
	for _, m := range fleet.Roster(beats, own, now) {
		fmt.Printf("%s stale=%v other-profiles=%v\n", m.Replica, m.Stale, m.DigestDiffers)
	}
	// Output:
	// r1 stale=false other-profiles=false
	// r2 stale=false other-profiles=true
	// r3 stale=true other-profiles=false
}

// ShareOf divides the median of the live replicas' learned limits: half in equal parts, half by
// the demand each published; the bulkhead then admits that share.
func ExampleShareOf() {
	knee := func(learned, demand int) []fleet.APILimit {
		return []fleet.APILimit{{Profile: "knee", Learned: learned, Demand: demand}}
	}
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	members := []fleet.Member{
		{Beat: fleet.Beat{Replica: "r1", Instance: "i1", At: now, Status: fleet.Status{Limits: knee(18, 20)}}},
		{Beat: fleet.Beat{Replica: "r2", Instance: "i2", At: now, Status: fleet.Status{Limits: knee(16, 20)}}},
		{Beat: fleet.Beat{Replica: "r3", Instance: "i3", At: now, Status: fleet.Status{Limits: knee(24, 0)}}},
	}
	s := fleet.ShareOf(members, "i1", knee(18, 25)[0], now)
	fmt.Printf("fleet limit %d, share %.2f\n", s.Fleet, s.Fraction)

	b, _ := bulkhead.New(bulkhead.Config{Algorithm: bulkhead.Fixed, Initial: 18})
	b.SetShare(s, time.Now())
	fmt.Println("admits", b.Snapshot().Limit)
	// Output:
	// fleet limit 18, share 0.42
	// admits 7
}
