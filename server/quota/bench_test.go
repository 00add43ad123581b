package quota_test

import (
	"testing"
	"time"

	"github.com/plimsoll/plimsoll/server/quota"
)

// BenchmarkTake is the cost the calls quota adds to each forwarded call: a Take under a quota,
// against a client without one (the baseline, limit 0), in the same process.
func BenchmarkTake(b *testing.B) {
	now := func() time.Time { return time.Date(2026, 12, 4, 14, 2, 30, 0, time.UTC) }
	for _, bc := range []struct {
		name  string
		limit int
	}{{"none", 0}, {"quota", 1 << 30}} {
		b.Run(bc.name, func(b *testing.B) {
			c := quota.New(now)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Take("agent-a", quota.Calls, bc.limit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
