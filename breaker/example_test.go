package breaker_test

import (
	"fmt"
	"time"

	"github.com/plimsoll/plimsoll/breaker"
)

// A 503 opens the breaker, calls are shed, one call a second is picked to probe the health
// route, and the first 2xx closes the breaker.
func ExampleBreaker() {
	start := time.Date(2025, time.March, 14, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }

	b := breaker.New(true) // the run's grant declares a health_check route

	fmt.Println("0.0 s:", b.Decide(at(0)))
	opened := b.RecordReply(at(0), 503, "5") // the forwarded call came back overloaded
	fmt.Println("opened:", opened)

	fmt.Println("0.1 s:", b.Decide(at(100)), "Retry-After:", b.RetryAfter(at(100)))

	fmt.Println("1.0 s:", b.Decide(at(1000)))
	fmt.Println("1.2 s:", b.Decide(at(1200)), "(a probe is in flight)")
	b.RecordProbe(at(1300), 503) // not ready yet

	fmt.Println("2.0 s:", b.Decide(at(2000)))
	b.RecordProbe(at(2050), 200) // ready: the breaker closes on the spot

	fmt.Println("2.1 s:", b.Decide(at(2100)), "open:", b.Open(at(2100)), "opens:", b.Opens())
	// Output:
	// 0.0 s: forward
	// opened: true
	// 0.1 s: shed Retry-After: 5
	// 1.0 s: probe
	// 1.2 s: shed (a probe is in flight)
	// 2.0 s: probe
	// 2.1 s: forward open: false opens: 1
}
