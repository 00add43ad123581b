package fleet_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server/fleet"
)

func sorted(cs []fleet.Count) string {
	s := make([]string, 0, len(cs))
	for _, c := range cs {
		s = append(s, fmt.Sprintf("%s/%s=%d", c.Client, c.Kind, c.N))
	}
	slices.Sort(s)
	return strings.Join(s, " ")
}

// awaitOthers waits (bounded) until q's view of the others for window is want.
func awaitOthers(t *testing.T, q *fleet.Quotas, window time.Time, want string) {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for got := sorted(q.Others(window)); got != want; got = sorted(q.Others(window)) {
		if time.Now().After(end) {
			t.Fatalf("others: %q, want %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestQuotaCountsAreSummedAcrossReplicas: each replica reads the sum of the others' latest
// counts for the same window, never its own, another window's, or a malformed or negative value.
func TestQuotaCountsAreSummedAcrossReplicas(t *testing.T) {
	ns := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	qs := []*fleet.Quotas{quotasOf(ctx, t, ns, "a"), quotasOf(ctx, t, ns, "b"), quotasOf(ctx, t, ns, "c")}
	w := time.Date(2026, 12, 4, 14, 2, 0, 0, time.UTC)
	publish := func(q *fleet.Quotas, window time.Time, counts ...fleet.Count) {
		if err := q.Publish(ctx, window, counts); err != nil {
			t.Fatal(err)
		}
	}
	publish(qs[0], w, fleet.Count{Client: "ana", Kind: "runs", N: 1})
	publish(qs[0], w, fleet.Count{Client: "ana", Kind: "runs", N: 3}, fleet.Count{Client: "bo", Kind: "calls", N: 7}) // the latest counts
	publish(qs[1], w, fleet.Count{Client: "ana", Kind: "runs", N: 2})
	publish(qs[1], w.Add(-time.Minute), fleet.Count{Client: "ana", Kind: "runs", N: 50})
	publish(qs[2], w, fleet.Count{Client: "ana", Kind: "runs", N: 1})

	// A hostile or broken writer's values are skipped.
	kv := quotasBucket(t, ns)
	prefix := fmt.Sprintf("w%d.", w.Unix())
	at := w.Format(time.RFC3339)
	kv.Put(prefix+"junk", []byte("not json"))
	kv.Put(prefix+"neg", []byte(fmt.Sprintf(`{"instance":"neg","window":%q,"counts":[{"client":"ana","kind":"runs","n":-100}]}`, at)))
	kv.Put(prefix+"liar", []byte(fmt.Sprintf(`{"instance":"other","window":%q,"counts":[{"client":"ana","kind":"runs","n":100}]}`, at)))

	awaitOthers(t, qs[2], w, "ana/runs=5 bo/calls=7")
	awaitOthers(t, qs[0], w.Add(-time.Minute), "ana/runs=50")
	awaitOthers(t, qs[0], w, "ana/runs=3") // b's 2 and c's 1, not its own
	if got := sorted(qs[0].Others(w.Add(-time.Minute))); got != "" {
		t.Fatalf("an earlier window's counts are forgotten once a later one is read: %q", got)
	}
}

// TestReservationsNeverPassTheQuota: three replicas reserving one unit at a time, concurrently,
// from the same window's key get exactly the quota between them; another window or client has
// its own total; a value that is not a count reads as the quota spent.
func TestReservationsNeverPassTheQuota(t *testing.T) {
	ns := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	qs := []*fleet.Quotas{quotasOf(ctx, t, ns, "a"), quotasOf(ctx, t, ns, "b"), quotasOf(ctx, t, ns, "c")}
	w := time.Date(2026, 12, 4, 14, 2, 0, 0, time.UTC)
	const limit = 20
	var got atomic.Int64
	var wg sync.WaitGroup
	for _, q := range qs {
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					n, err := q.Reserve(ctx, w, "ana b/c", "runs", 1, limit)
					if errors.Is(err, fleet.ErrReserveContended) {
						continue // every round lost: try again, as a take would on its next call
					}
					if err != nil {
						t.Error(err)
						return
					}
					if n == 0 {
						return
					}
					got.Add(int64(n))
				}
			}()
		}
	}
	wg.Wait()
	if got.Load() != limit {
		t.Fatalf("the fleet reserved %d units of a quota of %d", got.Load(), limit)
	}
	if n, err := qs[0].Reserve(ctx, w.Add(time.Minute), "ana b/c", "runs", 5, limit); err != nil || n != 5 {
		t.Fatalf("the next window: %d, %v; want 5 units", n, err)
	}
	if n, err := qs[1].Reserve(ctx, w, "bo", "runs", 25, limit); err != nil || n != limit {
		t.Fatalf("another client: %d, %v; want the whole quota, capped at %d", n, err, limit)
	}

	kv := quotasBucket(t, ns)
	if _, err := kv.Put(fmt.Sprintf("r%d.calls.%s", w.Unix(), base64.RawURLEncoding.EncodeToString([]byte("cy"))), []byte("-3")); err != nil {
		t.Fatal(err)
	}
	if n, err := qs[2].Reserve(ctx, w, "cy", "calls", 1, limit); err != nil || n != 0 {
		t.Fatalf("a forged total: %d, %v; want 0 units (the quota reads as spent)", n, err)
	}
}

// quotasOf joins replica name to the fleet on ns and opens its quotas bucket.
func quotasOf(ctx context.Context, t testing.TB, ns *natsserver.Server, name string) *fleet.Quotas {
	t.Helper()
	f, _ := join(t, ns, name)
	q, err := f.Quotas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Stop)
	return q
}

// quotasBucket is the fleet's quotas bucket as any NATS user with write access sees it.
func quotasBucket(t *testing.T, ns *natsserver.Server) nats.KeyValue {
	t.Helper()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := nc.JetStream()
	kv, err := js.KeyValue("plimsoll_test_quotas")
	if err != nil {
		t.Fatal(err)
	}
	return kv
}
