package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/internal/natstest"
	"github.com/plimsoll/plimsoll/server/fleet"
)

// BenchmarkPropagation measures a force-open's propagation: replica a writes a flag (set or
// clear, alternating) and the time is taken until all three replicas applied it. It reports the
// p50 and p99 over the run's toggles (run with -benchtime=100x for the 100 toggles in BENCHMARKS.md).
func BenchmarkPropagation(b *testing.B) {
	ns := natstest.Start(b)
	a, fa := join(b, ns, "a")
	_, fb := join(b, ns, "b")
	_, fc := join(b, ns, "c")
	key := fleet.Flag{Profile: "pets"}.Key()
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		reason := fmt.Sprint("toggle ", i)
		t0 := time.Now()
		var err error
		if i%2 == 0 {
			err = a.Set(context.Background(), fleet.Flag{Profile: "pets", Reason: reason})
		} else {
			err = a.Clear(context.Background(), "pets", "")
		}
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range []*flags{fa, fb, fc} {
			f.await(b, reason, func(m map[string]fleet.Flag) bool {
				v, ok := m[key]
				return (i%2 == 0) == ok && (!ok || v.Reason == reason)
			})
		}
		took = append(took, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkReloadFanOut measures an operator's reload across three replicas: a asks, b and c
// answer (their reload itself is a no-op here, so this is the fleet's round trip only).
func BenchmarkReloadFanOut(b *testing.B) {
	ns := natstest.Start(b)
	var fs []*fleet.Fleet
	for _, name := range []string{"a", "b", "c"} {
		f, _ := join(b, ns, name)
		if err := f.OnReload(func() fleet.ReloadReply { return fleet.ReloadReply{Digest: "d"} }); err != nil {
			b.Fatal(err)
		}
		if err := f.Heartbeat(context.Background(), func() fleet.Status { return fleet.Status{Digest: "d"} }, b.Logf); err != nil {
			b.Fatal(err)
		}
		fs = append(fs, f)
	}
	for end := time.Now().Add(30 * time.Second); len(fs[0].Members()) < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			b.Fatal("a does not list b and c")
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), fleet.ReloadWait)
		replies, missing, err := fs[0].Reload(ctx, "d")
		cancel()
		if err != nil || len(replies) != 2 || len(missing) != 0 {
			b.Fatalf("reload: %d replies, missing %v, %v", len(replies), missing, err)
		}
	}
}

// BenchmarkQuotaPublication measures the delay a fleet-wide quota's overshoot is bounded by:
// replica a publishes a new count and the time is taken until b's and c's view of the others
// shows it (the put, then the watch's delivery). It reports the p50 and p99 (run with
// -benchtime=200x for BENCHMARKS.md).
func BenchmarkQuotaPublication(b *testing.B) {
	ns := natstest.Start(b)
	ctx := context.Background()
	var qs []*fleet.Quotas
	for _, name := range []string{"a", "b", "c"} {
		f, _ := join(b, ns, name)
		q, err := f.Quotas(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(q.Stop)
		qs = append(qs, q)
	}
	window := time.Now().Truncate(time.Minute)
	var took []time.Duration
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		t0 := time.Now()
		if err := qs[0].Publish(ctx, window, []fleet.Count{{Client: "ana", Kind: "calls", N: i}}); err != nil {
			b.Fatal(err)
		}
		for _, q := range qs[1:] {
			for end := t0.Add(30 * time.Second); !shows(q.Others(window), i); time.Sleep(20 * time.Microsecond) {
				if time.Now().After(end) {
					b.Fatalf("count %d not seen", i)
				}
			}
		}
		took = append(took, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

func shows(cs []fleet.Count, n int) bool { return len(cs) == 1 && cs[0].N == n }

// BenchmarkReserve measures one quota reservation's round trip (read the window's total, then
// compare-and-set it), what a take waits when its replica's leased units are spent; b and c
// reserve on the same key at the same time, so lost rounds are in the figure. p50 and p99.
func BenchmarkReserve(b *testing.B) {
	ns := natstest.Start(b)
	ctx := context.Background()
	a, others := quotasOf(ctx, b, ns, "a"), []*fleet.Quotas{quotasOf(ctx, b, ns, "b"), quotasOf(ctx, b, ns, "c")}
	w := time.Date(2026, 12, 4, 14, 2, 0, 0, time.UTC)
	stop := make(chan struct{})
	for _, q := range others { // contention from the other replicas on the same key
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
					q.Reserve(ctx, w, "ana", "calls", 1, 1<<30)
				}
			}
		}()
	}
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := a.Reserve(ctx, w, "ana", "calls", 1, 1<<30); err != nil && !errors.Is(err, fleet.ErrReserveContended) {
			b.Fatal(err)
		}
		took = append(took, time.Since(t0))
	}
	b.StopTimer()
	close(stop)
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
