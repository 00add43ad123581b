package quota_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/server/quota"
)

// clock is an injected clock the tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var t0 = time.Date(2026, 12, 4, 14, 2, 0, 0, time.UTC)

func TestTakeRefusesAtTheQuotaAndNamesIt(t *testing.T) {
	clk := &clock{t0.Add(20 * time.Second)}
	c := quota.New(clk.now)
	for i := range 3 {
		if err := c.Take("ana", quota.Runs, 3); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	err := c.Take("ana", quota.Runs, 3)
	var r *quota.Refusal
	if !errors.As(err, &r) || !errors.Is(err, quota.ErrOverQuota) {
		t.Fatalf("4th run: %v, want a *quota.Refusal", err)
	}
	if r.Client != "ana" || r.Kind != quota.Runs || r.Limit != 3 || r.Used != 3 || !r.End.Equal(t0.Add(time.Minute)) || r.RetryAfter() != 40 {
		t.Fatalf("refusal %+v (retry %d)", r, r.RetryAfter())
	}
	for _, want := range []string{"client ana", "quota of 3 runs per minute", "14:02:00–14:03:00 UTC", "retry in 40s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if err := c.Take("bo", quota.Runs, 3); err != nil {
		t.Fatalf("another client's quota is its own: %v", err)
	}
	if err := c.Take("ana", quota.Calls, 3); err != nil {
		t.Fatalf("calls count apart from runs: %v", err)
	}
}

func TestANewWindowStartsAfresh(t *testing.T) {
	clk := &clock{t0.Add(59 * time.Second)}
	c := quota.New(clk.now)
	if err := c.Take("ana", quota.Calls, 1); err != nil {
		t.Fatal(err)
	}
	err := c.Take("ana", quota.Calls, 1)
	var r *quota.Refusal
	if !errors.As(err, &r) || r.RetryAfter() != 1 {
		t.Fatalf("second call in the window: %v", err)
	}
	clk.t = t0.Add(time.Minute)
	if err := c.Take("ana", quota.Calls, 1); err != nil {
		t.Fatalf("first call of the next window: %v", err)
	}
}

func TestNoQuotaIsNeverRefused(t *testing.T) {
	c := quota.New((&clock{t0}).now)
	for range 1000 {
		if err := c.Take("ana", quota.Runs, 0); err != nil {
			t.Fatal(err)
		}
	}
	if u := c.Usage(); len(u) != 0 {
		t.Fatalf("a client without a quota is not counted: %+v", u)
	}
}

func TestOthersCountsJoinTheLocalOnes(t *testing.T) {
	clk := &clock{t0}
	c := quota.New(clk.now)
	k := quota.Key{Client: "ana", Kind: quota.Runs}
	c.SetOthers(t0.Add(-time.Minute), map[quota.Key]int{k: 10}) // last window's: ignored
	if err := c.Take("ana", quota.Runs, 5); err != nil {
		t.Fatal(err)
	}
	c.SetOthers(t0, map[quota.Key]int{k: 3})
	if err := c.Take("ana", quota.Runs, 5); err != nil { // 1 + 3 < 5
		t.Fatal(err)
	}
	var r *quota.Refusal
	if err := c.Take("ana", quota.Runs, 5); !errors.As(err, &r) || r.Used != 5 { // 2 + 3
		t.Fatalf("with the others' 3: %v", err)
	}
	want := []quota.Usage{{Client: "ana", Kind: quota.Runs, Local: 2, Others: 3, End: t0.Add(time.Minute)}}
	if got := c.Usage(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
	clk.t = t0.Add(time.Minute)
	if u := c.Usage(); len(u) != 0 {
		t.Fatalf("a new window has no counts: %+v", u)
	}
}

func TestAnUnreachableFleetSplitsTheQuota(t *testing.T) {
	clk := &clock{t0}
	c := quota.New(clk.now)
	c.SetShare(3)
	admitted := 0
	for range 10 {
		if c.Take("ana", quota.Calls, 10) == nil {
			admitted++
		}
	}
	if admitted != 4 { // ceil(10/3)
		t.Fatalf("admitted %d of a quota of 10 split three ways, want 4", admitted)
	}
	err := c.Take("ana", quota.Calls, 10)
	if !strings.Contains(fmt.Sprint(err), "1/3 of the quota") {
		t.Fatalf("the refusal does not say the quota is split: %v", err)
	}
	c.SetShare(1) // the fleet is back
	if err := c.Take("ana", quota.Calls, 10); err != nil {
		t.Fatal(err)
	}
}

// TestFleetOvershootIsBounded models a fleet of R replicas that publish their counts every sync
// interval: between two syncs a replica admits on the others' last published counts. The fleet's
// total in a window stays within quota + (R−1)·A, where A is the most one replica admits in one
// interval (README "Running a fleet"), and once synced no replica admits more.
func TestFleetOvershootIsBounded(t *testing.T) {
	const replicas, q = 3, 20
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		clk := &clock{t0}
		cs := make([]*quota.Counter, replicas)
		for i := range cs {
			cs[i] = quota.New(clk.now)
		}
		total, maxPerInterval := 0, 0
		for range 10 { // intervals
			for _, c := range cs {
				n := 0
				for range rng.IntN(8) { // demand in this interval
					if c.Take("ana", quota.Runs, q) == nil {
						n++
					}
				}
				total += n
				maxPerInterval = max(maxPerInterval, n)
			}
			sync(cs)
		}
		if bound := q + (replicas-1)*maxPerInterval; total > bound {
			t.Fatalf("seed %d: the fleet admitted %d, over the bound %d", seed, total, bound)
		}
		for i, c := range cs {
			if total >= q && c.Take("ana", quota.Runs, q) == nil {
				t.Fatalf("seed %d: replica %d admitted after a sync with the quota spent (%d)", seed, i, total)
			}
		}
	}
}

// TestLeasesAdmitOnlyReservedUnits: with leases on, a take without a reserved unit asks for one
// (ErrNoLease), a grant of n admits exactly n, a grant of 0 refuses for the rest of the window
// naming the whole quota as used, and a new window starts with no units and no refusal.
func TestLeasesAdmitOnlyReservedUnits(t *testing.T) {
	clk := &clock{t0.Add(10 * time.Second)}
	c := quota.New(clk.now)
	c.SetLeasing(true)
	if err := c.Take("ana", quota.Runs, 5); !errors.Is(err, quota.ErrNoLease) {
		t.Fatalf("take without a lease: %v, want ErrNoLease", err)
	}
	k := quota.Key{Client: "ana", Kind: quota.Runs}
	c.Grant(t0, k, 2)
	c.Grant(t0.Add(-time.Minute), k, 9) // another window's units are dropped
	for i := range 2 {
		if err := c.Take("ana", quota.Runs, 5); err != nil {
			t.Fatalf("leased take %d: %v", i+1, err)
		}
	}
	if err := c.Take("ana", quota.Runs, 5); !errors.Is(err, quota.ErrNoLease) {
		t.Fatalf("take after the lease is spent: %v, want ErrNoLease", err)
	}
	c.Grant(t0, k, 1)
	c.Grant(t0, k, 0) // the fleet has reserved the whole quota, one unit of it here
	if err := c.Take("ana", quota.Runs, 5); err != nil {
		t.Fatalf("a unit held when the fleet is spent is still admitted: %v", err)
	}
	var r *quota.Refusal
	if err := c.Take("ana", quota.Runs, 5); !errors.As(err, &r) || r.Used != 5 {
		t.Fatalf("take once the fleet is spent: %v, want a refusal with used 5", err)
	}
	clk.t = t0.Add(time.Minute)
	if err := c.Take("ana", quota.Runs, 5); !errors.Is(err, quota.ErrNoLease) {
		t.Fatalf("take in a new window: %v, want ErrNoLease (no units carried over, no refusal)", err)
	}
	c.SetLeasing(false)
	if err := c.Take("ana", quota.Runs, 5); err != nil {
		t.Fatalf("take with leases off: %v", err)
	}
}

// TestLeasedFleetNeverPassesTheQuota models replicas that reserve units from one serialised
// total (the fleet's compare-and-set key) in leases of a quarter share: whatever the demand's
// order, the fleet admits at most the quota, and exactly the quota once every replica has spent
// its leased units.
func TestLeasedFleetNeverPassesTheQuota(t *testing.T) {
	const replicas, q, lease = 3, 20, 2
	k := quota.Key{Client: "ana", Kind: quota.Runs}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 2))
		clk := &clock{t0}
		cs := make([]*quota.Counter, replicas)
		for i := range cs {
			cs[i] = quota.New(clk.now)
			cs[i].SetLeasing(true)
		}
		reserved, admitted := 0, 0
		take := func(c *quota.Counter) bool {
			err := c.Take("ana", quota.Runs, q)
			if errors.Is(err, quota.ErrNoLease) {
				n := min(lease, q-reserved)
				reserved += n
				c.Grant(t0, k, n)
				err = c.Take("ana", quota.Runs, q)
			}
			if err == nil {
				admitted++
			}
			return err == nil
		}
		for range 40 {
			take(cs[rng.IntN(replicas)])
		}
		if admitted > q {
			t.Fatalf("seed %d: admitted %d against a quota of %d", seed, admitted, q)
		}
		for _, c := range cs { // demand outlasts every lease
			for take(c) {
			}
		}
		if admitted != q {
			t.Fatalf("seed %d: admitted %d once every lease was spent, want the quota %d", seed, admitted, q)
		}
	}
}

// sync hands every replica the sum of the others' counts, as the fleet's bucket does.
func sync(cs []*quota.Counter) {
	locals := make([]map[quota.Key]int, len(cs))
	var start time.Time
	for i, c := range cs {
		start, locals[i] = c.Local()
	}
	for i, c := range cs {
		others := map[quota.Key]int{}
		for j, l := range locals {
			for k, n := range l {
				if j != i {
					others[k] += n
				}
			}
		}
		c.SetOthers(start, others)
	}
}

func ExampleCounter() {
	now := func() time.Time { return time.Date(2026, 12, 4, 14, 2, 30, 0, time.UTC) }
	c := quota.New(now)
	fmt.Println(c.Take("ana", quota.Runs, 1))
	fmt.Println(c.Take("ana", quota.Runs, 1))
	// Output:
	// <nil>
	// client ana is over its quota of 1 runs per minute: 1 counted in the window 14:02:00–14:03:00 UTC; retry in 30s
}

// A unit given back (its run refused after the quota passed it) is the client's to use again in
// the same window; a unit of a window already over is not.
func TestGiveReturnsAnUnusedUnit(t *testing.T) {
	clk := &clock{t0.Add(10 * time.Second)}
	c := quota.New(clk.now)
	u, err := c.TakeUnit("ana", quota.Runs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Take("ana", quota.Runs, 1); !errors.Is(err, quota.ErrOverQuota) {
		t.Fatalf("second run before the give: %v, want over quota", err)
	}
	c.Give(u)
	if _, counts := c.Local(); counts[quota.Key{Client: "ana", Kind: quota.Runs}] != 0 {
		t.Fatalf("count after the give: %v, want 0", counts)
	}
	old, err := c.TakeUnit("ana", quota.Runs, 1)
	if err != nil {
		t.Fatalf("the unit given back: %v", err)
	}
	c.Give(quota.Unit{}) // nothing was counted under no quota: nothing to give
	if err := c.Take("ana", quota.Runs, 1); !errors.Is(err, quota.ErrOverQuota) {
		t.Fatalf("after giving an empty unit: %v, want over quota", err)
	}

	clk.t = t0.Add(quota.Window + 5*time.Second)
	if err := c.Take("ana", quota.Runs, 1); err != nil {
		t.Fatalf("the next window: %v", err)
	}
	c.Give(old) // last window's: its count is history
	if err := c.Take("ana", quota.Runs, 1); !errors.Is(err, quota.ErrOverQuota) {
		t.Fatalf("a unit of the last window was given into this one: %v", err)
	}
}

// In a fleet, a leased unit given back is this replica's to admit again without asking the
// fleet: it is still reserved there.
func TestGiveReturnsALeasedUnitToTheLease(t *testing.T) {
	clk := &clock{t0.Add(10 * time.Second)}
	c := quota.New(clk.now)
	c.SetLeasing(true)
	k := quota.Key{Client: "ana", Kind: quota.Runs}
	c.Grant(c.WindowStart(), k, 1)
	u, err := c.TakeUnit("ana", quota.Runs, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Take("ana", quota.Runs, 5); !errors.Is(err, quota.ErrNoLease) {
		t.Fatalf("lease spent: %v, want ErrNoLease", err)
	}
	c.Give(u)
	if err := c.Take("ana", quota.Runs, 5); err != nil {
		t.Fatalf("the leased unit given back: %v", err)
	}
	if err := c.Take("ana", quota.Runs, 5); !errors.Is(err, quota.ErrNoLease) {
		t.Fatalf("only one unit came back: %v, want ErrNoLease", err)
	}
}
