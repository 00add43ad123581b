package breaker

import "testing"

// BenchmarkDecideShed measures the decision the broker takes on every call while shedding:
// an open 503 window with a health check, before its first probe is due, so every probe
// condition is evaluated.
func BenchmarkDecideShed(b *testing.B) {
	br := New(true)
	if !br.RecordReply(at(0), 503, "30") {
		b.Fatal("window did not open")
	}
	now := at(500)
	b.ReportAllocs()
	for b.Loop() {
		if br.Decide(now) != Shed {
			b.Fatal("expected a shed")
		}
	}
}

func BenchmarkParseRetryAfter(b *testing.B) {
	for _, c := range []struct{ name, value string }{
		{"delta-seconds", "5"},
		{"http-date", "Fri, 14 Mar 2025 12:00:10 GMT"},
		{"malformed", "120junk"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ParseRetryAfter(c.value, t0)
			}
		})
	}
}
