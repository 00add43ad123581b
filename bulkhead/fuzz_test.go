package bulkhead_test

import (
	"errors"
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/bulkhead"
)

// FuzzParseTier: every input is a tier or an ErrTier naming the input; a tier's name parses back
// to itself. Seeds: testdata/fuzz/FuzzParseTier.
func FuzzParseTier(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		tier, err := bulkhead.ParseTier(s)
		if err != nil {
			if !errors.Is(err, bulkhead.ErrTier) {
				t.Fatalf("ParseTier(%q): %v is not an ErrTier", s, err)
			}
			return
		}
		if back, err := bulkhead.ParseTier(tier.String()); err != nil || back != tier {
			t.Fatalf("ParseTier(%q) = %s, which does not parse back", s, tier)
		}
	})
}

// FuzzBulkhead drives one bulkhead through any sequence of arrivals, expiries, releases and
// retunes, reading ops two bytes at a time, and checks the rules after every step: the queue never
// exceeds max_queue, nothing is shed while a less critical call waits, and every ticket ends up
// admitted, shed or left exactly once. Seeds: testdata/fuzz/FuzzBulkhead.
func FuzzBulkhead(f *testing.F) {
	f.Fuzz(func(t *testing.T, limit, queue uint8, ops []byte) {
		cfg := bulkhead.Config{Algorithm: bulkhead.Gradient2, Min: 1 + int(limit%8), Max: 16, MaxQueue: int(queue % 8), QueueTimeout: time.Second}
		b, err := bulkhead.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var live []*bulkhead.Ticket
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%5, int(ops[i+1])
			now = now.Add(time.Duration(arg) * time.Millisecond)
			switch {
			case op <= 1:
				live = append(live, b.Enter(now, bulkhead.Tiers[arg%3]))
			case len(live) == 0:
			case op == 2:
				b.Expire(live[arg%len(live)], now)
			case op == 3:
				b.Release(live[arg%len(live)], now, time.Duration(arg)*time.Millisecond, arg%7 == 0)
			case op == 4:
				b.Leave(live[arg%len(live)], now)
			}
			snap := b.Snapshot()
			if snap.Queued > cfg.MaxQueue || snap.Queued < 0 || snap.InFlight < 0 {
				t.Fatalf("step %d: %d queued (max %d), %d in flight", i/2, snap.Queued, cfg.MaxQueue, snap.InFlight)
			}
			for _, tk := range live {
				if _, _, s, _ := b.Result(tk); s != nil && s.LowerWaiting > 0 {
					t.Fatalf("step %d: a %s call shed (%s) while %d less critical waited", i/2, s.Tier, s.Kind, s.LowerWaiting)
				}
			}
		}
		waiting := 0
		for _, tk := range live {
			if _, _, _, pending := b.Result(tk); pending {
				waiting++
			}
		}
		if waiting != b.Snapshot().Queued {
			t.Fatalf("%d tickets pending, %d queued", waiting, b.Snapshot().Queued)
		}
	})
}
