package breaker

import (
	"math"
	"net/http"
	"time"
)

// maxParsed is the longest Retry-After ParseRetryAfter reports: the largest whole number of
// seconds a time.Duration can hold. Bigger values clamp to it instead of overflowing.
const maxParsed = time.Duration(math.MaxInt64/int64(time.Second)) * time.Second

// ParseRetryAfter parses a Retry-After value relative to now: either delta-seconds (a
// non-negative integer, digits only) or an HTTP-date in any format http.ParseTime accepts.
// ok is false for a missing or malformed value, including a sign, a fraction, surrounding
// spaces or trailing junk. A date in the past gives 0. Values beyond maxParsed clamp to it.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	if v == "" {
		return 0, false
	}
	if allDigits(v) {
		return parseSeconds(v), true
	}
	when, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	// time.Time.Sub saturates rather than overflowing, so only the range needs bounding.
	return min(max(when.Sub(now), 0), maxParsed), true
}

// Cooldown is how long an overloaded reply carrying Retry-After v opens the breaker for:
// ParseRetryAfter clamped to [0, MaxRetryAfter], or DefaultCooldown when v is missing or
// malformed.
func Cooldown(v string, now time.Time) time.Duration {
	d, ok := ParseRetryAfter(v, now)
	if !ok {
		return DefaultCooldown
	}
	return min(max(d, 0), MaxRetryAfter)
}

// allDigits reports whether s is non-empty and made of ASCII digits only.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseSeconds reads an all-digit string as seconds, clamping at maxParsed so that
// arbitrarily long inputs cannot overflow.
func parseSeconds(digits string) time.Duration {
	const limit = int64(maxParsed / time.Second)
	var n int64
	for i := 0; i < len(digits); i++ {
		n = n*10 + int64(digits[i]-'0')
		if n > limit {
			return maxParsed
		}
	}
	return time.Duration(n) * time.Second
}
