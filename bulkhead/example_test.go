package bulkhead_test

import (
	"fmt"
	"time"

	"github.com/plimsoll/plimsoll/bulkhead"
)

// A fixed limit of one with a queue of one: the second call waits, a critical third displaces it.
func Example() {
	b, _ := bulkhead.New(bulkhead.Config{Algorithm: bulkhead.Fixed, Initial: 1, MaxQueue: 1, QueueTimeout: time.Second})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	first := b.Enter(now, bulkhead.Normal)
	second := b.Enter(now, bulkhead.Sheddable)
	third := b.Enter(now.Add(time.Millisecond), bulkhead.Critical)
	_, _, shed, _ := b.Result(second)
	fmt.Println(shed.Reason())

	b.Release(first, now.Add(20*time.Millisecond), 20*time.Millisecond, false)
	<-third.Done()
	ok, waited, _, _ := b.Result(third)
	fmt.Println("critical admitted:", ok, "after", waited)
	// Output:
	// API limit: displaced from the queue by a more critical call after 1ms (limit 1, 1 in flight, 1 queued)
	// critical admitted: true after 19ms
}

// A replica of a fleet admits its share of the fleet's limit, never more than it learned itself.
func ExampleBulkhead_SetShare() {
	b, _ := bulkhead.New(bulkhead.Config{Algorithm: bulkhead.Fixed, Initial: 16})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []bulkhead.Share{
		{Fraction: 0.25},            // a quarter of its own limit
		{Fleet: 10, Fraction: 0.5},  // half of a lower fleet limit
		{Fleet: 100, Fraction: 0.5}, // a higher fleet limit is not taken
		{},                          // alone again: the whole limit
	} {
		b.SetShare(s, now)
		fmt.Println(b.Snapshot().Limit)
	}
	// Output:
	// 4
	// 5
	// 8
	// 16
}
