package timeline_test

import (
	"fmt"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/timeline"
)

// Windows pieces the breaker's windows together from the events recorded beside the trace.
func ExampleWindows() {
	events := []broker.BreakerEvent{
		{TMs: 500, Kind: broker.EventOpen, Status: 503, RetryAfter: "5", CooldownMs: 5000, UntilMs: 5500},
		{TMs: 1500, Kind: broker.EventProbe, Status: 503},
		{TMs: 2500, Kind: broker.EventProbe, Status: 200, OK: true},
		{TMs: 2500, Kind: broker.EventClose},
	}
	for _, w := range timeline.Windows(events) {
		fmt.Printf("%d–%d ms: %s\n", w.FromMs, w.ToMs, timeline.WindowLabel(w))
	}
	// Output:
	// 500–2500 ms: 503 · Retry-After 5 → 5.0 s · closed by a probe at 2.5 s
}
