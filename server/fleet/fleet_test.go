package fleet_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// flags is a replica's view, as its apply callback builds it; await wakes on every change.
type flags struct {
	mu      sync.Mutex
	cond    *sync.Cond
	set     map[string]fleet.Flag
	applied int
}

func newFlags() *flags {
	f := &flags{set: map[string]fleet.Flag{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *flags) apply(c fleet.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Set {
		f.set[c.Flag.Key()] = c.Flag
	} else {
		delete(f.set, c.Flag.Key())
	}
	f.applied++
	f.cond.Broadcast()
}

// await waits (bounded, generously for a loaded machine) until ok holds on the flags.
func (f *flags) await(t testing.TB, what string, ok func(map[string]fleet.Flag) bool) {
	t.Helper()
	deadline := time.AfterFunc(30*time.Second, func() { f.mu.Lock(); f.cond.Broadcast(); f.mu.Unlock() })
	defer deadline.Stop()
	end := time.Now().Add(30 * time.Second)
	f.mu.Lock()
	defer f.mu.Unlock()
	for !ok(f.set) {
		if time.Now().After(end) {
			t.Fatalf("%s: not reached; flags %v", what, f.set)
		}
		f.cond.Wait()
	}
}

func join(t testing.TB, ns *natsserver.Server, replica string) (*fleet.Fleet, *flags) {
	t.Helper()
	fl := newFlags()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := fleet.Join(ctx, fleet.Options{URL: ns.ClientURL(), Name: "test", Replica: replica}, fl.apply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f, fl
}

func TestForceOpenReachesEveryReplica(t *testing.T) {
	ns := natstest.Start(t)
	a, fa := join(t, ns, "a")
	_, fb := join(t, ns, "b")
	_, fc := join(t, ns, "c")
	ctx := context.Background()
	route := fleet.Flag{Profile: "pets", Route: "GET /pets/*", Operator: "ana", Reason: "upstream 5xx"}
	if err := a.Set(ctx, fleet.Flag{Profile: "pets", Operator: "ana", Reason: "incident 7"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Set(ctx, route); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*flags{fa, fb, fc} {
		f.await(t, "both flags set", func(m map[string]fleet.Flag) bool {
			p, r := m[fleet.Flag{Profile: "pets"}.Key()], m[route.Key()]
			return p.Reason == "incident 7" && p.Operator == "ana" && p.Replica == "a" && r.Route == "GET /pets/*"
		})
	}
	if err := a.Clear(ctx, "pets", ""); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*flags{fa, fb, fc} {
		f.await(t, "profile flag cleared, route flag kept", func(m map[string]fleet.Flag) bool {
			_, p := m[fleet.Flag{Profile: "pets"}.Key()]
			_, r := m[route.Key()]
			return !p && r
		})
	}
}

func TestJoinAppliesCurrentFlagsBeforeReturning(t *testing.T) {
	ns := natstest.Start(t)
	a, _ := join(t, ns, "a")
	if err := a.Set(context.Background(), fleet.Flag{Profile: "pets", Reason: "held"}); err != nil {
		t.Fatal(err)
	}
	a.Close() // the flag outlives its writer
	_, fb := join(t, ns, "b")
	fb.mu.Lock()
	got := fb.set[fleet.Flag{Profile: "pets"}.Key()]
	fb.mu.Unlock()
	if got.Reason != "held" || got.Replica != "a" {
		t.Fatalf("a joining replica did not have the current flag applied when Join returned: %+v", got)
	}
}

func TestJoinRefusesBadOptions(t *testing.T) {
	_, err := fleet.Join(context.Background(), fleet.Options{URL: "nats://127.0.0.1:1", Name: "a.b", Replica: "r"}, func(fleet.Change) {})
	if !errors.Is(err, fleet.ErrBadOptions) {
		t.Fatalf("Join with a dotted fleet name: %v, want ErrBadOptions", err)
	}
}
