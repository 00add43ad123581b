package breaker

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The seed corpus lives in testdata/fuzz/FuzzParseRetryAfter: each entry is a Retry-After value
// and the Unix second it is read at.
func FuzzParseRetryAfter(f *testing.F) {
	f.Fuzz(func(t *testing.T, value string, nowUnix int64) {
		now := time.Unix(nowUnix, 0).UTC()
		d, ok := ParseRetryAfter(value, now)

		if ok && (d < 0 || d > maxParsed) {
			t.Fatalf("ParseRetryAfter(%q) = %v, outside [0, %v]", value, d, maxParsed)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) rejected the value but returned %v", value, d)
		}
		checkCooldown(t, value, now, d, ok)

		if isDigitString(value) {
			want := referenceSeconds(value)
			if !ok || d != want {
				t.Fatalf("ParseRetryAfter(%q) = %v, %t; reference says %v, true", value, d, ok, want)
			}
			return
		}
		// Anything else is accepted exactly when net/http accepts it as a date.
		if _, err := http.ParseTime(value); ok != (err == nil) {
			t.Fatalf("ParseRetryAfter(%q) ok=%t, but http.ParseTime error is %v", value, ok, err)
		}
	})
}

// checkCooldown holds Cooldown to its contract given what ParseRetryAfter said.
func checkCooldown(t *testing.T, value string, now time.Time, d time.Duration, ok bool) {
	t.Helper()
	c := Cooldown(value, now)
	want := DefaultCooldown
	if ok {
		want = min(d, MaxRetryAfter)
	}
	if c < 0 || c > MaxRetryAfter || c != want {
		t.Fatalf("Cooldown(%q) = %v, want %v within [0, %v]", value, c, want, MaxRetryAfter)
	}
}

// isDigitString is an independent spelling of "non-empty and ASCII digits only".
func isDigitString(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// referenceSeconds parses an all-digit string the obvious way, clamping what does not fit.
func referenceSeconds(digits string) time.Duration {
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || n > uint64(maxParsed/time.Second) {
		return maxParsed
	}
	return time.Duration(n) * time.Second
}
