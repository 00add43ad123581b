// Package quota counts each client's runs and calls in fixed one-minute windows and refuses the
// one that would pass the client's quota. It is pure logic: the clock is injected and a fleet's
// other replicas' counts are handed in (SetOthers), never fetched.
package quota

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Window is the length of a quota window. Windows are aligned to the clock's minutes, so every
// replica of a fleet names the same window for the same instant.
const Window = time.Minute

// Kind is what a quota counts.
type Kind string

const (
	Runs  Kind = "runs"
	Calls Kind = "calls"
)

// Field is the kind's name in the clients file: runs_per_minute, calls_per_minute.
func (k Kind) Field() string { return string(k) + "_per_minute" }

// Key names one client's count of one kind.
type Key struct {
	Client string
	Kind   Kind
}

// ErrOverQuota is what every Refusal matches with errors.Is.
var ErrOverQuota = errors.New("over quota")

// Refusal is a run or call refused because its client's quota for the window is spent.
type Refusal struct {
	Key
	Limit int       // the quota: runs or calls per minute
	Used  int       // counted in the window when refused (the fleet's, when in a fleet)
	Share int       // > 1 while the fleet is unreachable: this replica may admit Limit/Share alone
	Start time.Time // the window
	End   time.Time
	Wait  time.Duration // until End
}

func (r *Refusal) Error() string {
	s := fmt.Sprintf("client %s is over its quota of %d %s per minute: %d counted in the window %s–%s UTC; retry in %ds",
		r.Client, r.Limit, r.Kind, r.Used, r.Start.UTC().Format("15:04:05"), r.End.UTC().Format("15:04:05"), r.RetryAfter())
	if r.Share > 1 {
		s += fmt.Sprintf(" (the fleet is unreachable: this replica admits 1/%d of the quota alone)", r.Share)
	}
	return s
}

func (r *Refusal) Is(target error) bool { return target == ErrOverQuota }

// RetryAfter is the wait in whole seconds, rounded up and at least 1: a Retry-After value.
func (r *Refusal) RetryAfter() int {
	return max(1, int((r.Wait+time.Second-1)/time.Second))
}

// Counter counts one replica's admissions. Its methods are safe for concurrent use.
type Counter struct {
	mu     sync.Mutex
	now    func() time.Time
	start  time.Time   // the current window's start
	local  map[Key]int // admitted here in the current window
	others map[Key]int // admitted by the fleet's other replicas, as last handed in
	share  int         // ≥ 1; > 1 while the fleet is unreachable (see SetShare)

	// With leases on (a connected fleet), a run or call is admitted only from units this replica
	// reserved from the fleet for the window (Grant): the fleet never admits past a quota.
	leasing bool
	leased  map[Key]int  // reserved units not yet admitted
	spent   map[Key]bool // the fleet has reserved the whole quota: refuse without asking again
}

// ErrNoLease is Take's answer, with leases on, when this replica holds no reserved unit for the
// key: the caller reserves from the fleet, hands the units in with Grant, and takes again.
var ErrNoLease = errors.New("quota: no reserved unit left; reserve from the fleet")

// New returns a counter reading the clock now (nil: time.Now).
func New(now func() time.Time) *Counter {
	if now == nil {
		now = time.Now
	}
	return &Counter{now: now, local: map[Key]int{}, others: map[Key]int{}, share: 1, leased: map[Key]int{}, spent: map[Key]bool{}}
}

// roll starts a new window when the clock has left the current one; the caller holds mu.
func (c *Counter) roll() time.Time {
	t := c.now()
	if start := t.Truncate(Window); !start.Equal(c.start) {
		c.start, c.local, c.others = start, map[Key]int{}, map[Key]int{}
		c.leased, c.spent = map[Key]int{}, map[Key]bool{} // a window's leases end with it
	}
	return t
}

// Take counts one run or call of client and returns nil, or a *Refusal when the client's quota
// for the window is spent: when this replica's count plus the others' last known counts has
// reached limit, or, while the fleet is unreachable, when this replica's own count has reached
// its share of limit. A limit ≤ 0 is no quota.
func (c *Counter) Take(client string, kind Kind, limit int) error {
	_, err := c.TakeUnit(client, kind, limit)
	return err
}

// Unit is one counted run or call, as Give needs it back.
type Unit struct {
	key    Key
	start  time.Time // its window; zero when nothing was counted (no quota)
	leased bool      // taken from units reserved from the fleet
}

// TakeUnit is Take, and names what it counted so that Give can return it.
func (c *Counter) TakeUnit(client string, kind Kind, limit int) (Unit, error) {
	if limit <= 0 {
		return Unit{}, nil
	}
	k := Key{client, kind}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.roll()
	leasing := c.leasing && c.share == 1
	if leasing && c.leased[k] > 0 { // a reserved unit: the fleet's total already counts it
		c.leased[k]--
		c.local[k]++
		return Unit{key: k, start: c.start, leased: true}, nil
	}
	used := c.local[k] + c.others[k]
	if c.spent[k] {
		used = max(used, limit) // the fleet has reserved it all, whoever has admitted it yet
	}
	own := (limit + c.share - 1) / c.share // the share, rounded up so a quota of 1 stays usable
	if used >= limit || (c.share > 1 && c.local[k] >= own) {
		end := c.start.Add(Window)
		return Unit{}, &Refusal{Key: k, Limit: limit, Used: used, Share: c.share, Start: c.start, End: end, Wait: end.Sub(t)}
	}
	if leasing {
		return Unit{}, ErrNoLease
	}
	c.local[k]++
	return Unit{key: k, start: c.start}, nil
}

// Give returns a unit that was counted but not used — a run refused after its quota passed it
// (busy, or its client gone while it queued) never ran. The count goes down by one and a leased
// unit is this replica's to admit again. A unit of a window already over is not returned: that
// window's count is history.
func (c *Counter) Give(u Unit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll()
	if u.start.IsZero() || !u.start.Equal(c.start) || c.local[u.key] == 0 {
		return
	}
	c.local[u.key]--
	if u.leased {
		c.leased[u.key]++
	}
}

// SetLeasing turns leases on (a replica of a connected fleet) or off (alone, or the fleet
// unreachable: then SetShare's split applies and leases are not asked for).
func (c *Counter) SetLeasing(on bool) {
	c.mu.Lock()
	c.leasing = on
	c.mu.Unlock()
}

// Grant hands in n units of key reserved from the fleet for the window starting at start; n = 0
// says the fleet has reserved the whole quota, so Take refuses until the window ends. Units of
// another window are dropped (a window's unused units are lost: under-admission, never over).
func (c *Counter) Grant(start time.Time, k Key, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll()
	if !start.Equal(c.start) {
		return
	}
	if n <= 0 {
		c.spent[k] = true
		return
	}
	c.leased[k] += n
}

// WindowStart is the current window's start.
func (c *Counter) WindowStart() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll()
	return c.start
}

// Local is this replica's counts in the current window, for publishing to the fleet.
func (c *Counter) Local() (start time.Time, counts map[Key]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll()
	counts = make(map[Key]int, len(c.local))
	for k, n := range c.local {
		counts[k] = n
	}
	return c.start, counts
}

// SetOthers hands in the sum of the other replicas' counts in the window starting at start; counts
// of another window are ignored (a late or early publication).
func (c *Counter) SetOthers(start time.Time, counts map[Key]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll()
	if !start.Equal(c.start) {
		return
	}
	c.others = make(map[Key]int, len(counts))
	for k, n := range counts {
		c.others[k] = n
	}
}

// SetShare says the fleet is unreachable and had n live replicas (n > 1): until SetShare(1),
// this replica admits at most limit/n (rounded up) of each quota on its own count, besides the
// others' last known counts, so the partitioned fleet together stays within limit + n − 1.
func (c *Counter) SetShare(n int) {
	c.mu.Lock()
	c.share = max(1, n)
	c.mu.Unlock()
}

// Usage is one client's count of one kind in the current window.
type Usage struct {
	Client string    `json:"client"`
	Kind   Kind      `json:"kind"`
	Local  int       `json:"local"`  // admitted by this replica
	Others int       `json:"others"` // admitted by the fleet's other replicas, as last known
	End    time.Time `json:"window_end"`
}

// Usage lists the current window's counts, by client then kind.
func (c *Counter) Usage() []Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll()
	keys := map[Key]bool{}
	for k := range c.local {
		keys[k] = true
	}
	for k := range c.others {
		keys[k] = true
	}
	out := make([]Usage, 0, len(keys))
	for k := range keys {
		out = append(out, Usage{Client: k.Client, Kind: k.Kind, Local: c.local[k], Others: c.others[k], End: c.start.Add(Window)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Client != out[j].Client {
			return out[i].Client < out[j].Client
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}
