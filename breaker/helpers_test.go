package breaker

import "time"

// t0 is the fixed origin of every synthetic timeline in these tests.
var t0 = time.Date(2025, time.March, 14, 12, 0, 0, 0, time.UTC)

// at is t0 plus ms milliseconds; integer milliseconds keep float error out of the timelines.
func at(ms int) time.Time {
	return t0.Add(time.Duration(ms) * time.Millisecond)
}
