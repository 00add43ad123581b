package broker_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/bulkhead"
)

// BenchmarkForwardWithLimit: a whole forwarded Broker.Call to an in-memory API, uncontended,
// without a concurrency block (the baseline) and with each algorithm. The difference is what the
// API limit costs a call. Goal: ≤ 2 µs.
func BenchmarkForwardWithLimit(b *testing.B) {
	rt := rtFunc(func(*http.Request) (*http.Response, error) { return inMemReply(200, "{}"), nil })
	req := broker.Request{Method: "GET", Path: "/pets/1"}
	ctx := context.Background()
	for _, tc := range []struct{ name, block string }{
		{"baseline=no-limit", ""},
		{"fixed", "concurrency:\n  limit: 64\n"},
		{"aimd", "concurrency:\n  limit: aimd\n"},
		{"gradient2", "concurrency:\n  limit: gradient2\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := writeProfile(b, "http://api.test", "routes:\n  - GET /pets/*\nlimits:\n  max_host_calls: 1000\nbudget:\n  calls: 1000\n"+tc.block)
			limits := broker.NewLimits()
			var run *broker.Broker
			calls := 1000
			b.ReportAllocs()
			for b.Loop() {
				if calls == 1000 { // a fresh run per 1,000 calls: one run's trace must not dominate
					b.StopTimer()
					run, calls = newLimitedRun(b, p, rt, limits, "bench", bulkhead.Normal), 0
					b.StartTimer()
				}
				calls++
				if resp := run.Call(ctx, req); resp.Status != 200 {
					b.Fatal(resp.Status)
				}
			}
		})
	}
}
