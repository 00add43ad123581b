package breaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Every Retry-After below is read against t0, Friday 14 March 2025 12:00:00 UTC.

func TestParseRetryAfter(t *testing.T) {
	cases := []struct {
		name   string
		value  string
		want   time.Duration
		wantOK bool
	}{
		{"zero seconds", "0", 0, true},
		{"delta-seconds", "5", 5 * time.Second, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"beyond the cap is not capped here", "120", 120 * time.Second, true},
		{"huge integer clamps", "99999999999", maxParsed, true},
		{"integer beyond int64 clamps", "99999999999999999999999", maxParsed, true},
		{"IMF-fixdate", "Fri, 14 Mar 2025 12:00:10 GMT", 10 * time.Second, true},
		{"RFC 850 date", "Friday, 14-Mar-25 12:00:10 GMT", 10 * time.Second, true},
		{"ANSI C date", "Fri Mar 14 12:00:10 2025", 10 * time.Second, true},
		{"ANSI C date, one-digit day", "Sun Mar  2 12:00:00 2025", 0, true},
		{"date an hour ahead", "Fri, 14 Mar 2025 13:00:00 GMT", time.Hour, true},
		{"date now", "Fri, 14 Mar 2025 12:00:00 GMT", 0, true},
		{"past date", "Fri, 14 Mar 2025 11:59:00 GMT", 0, true},
		{"far future date clamps", "Fri, 31 Dec 9999 23:59:59 GMT", maxParsed, true},
		{"missing", "", 0, false},
		{"negative", "-5", 0, false},
		{"fraction", "1.5", 0, false},
		{"trailing junk", "120junk", 0, false},
		{"leading space", " 5", 0, false},
		{"trailing space", "5 ", 0, false},
		{"plus sign", "+5", 0, false},
		{"hex", "0x10", 0, false},
		{"exponent", "1e3", 0, false},
		{"word", "soon", 0, false},
		{"non-ASCII digit", "٥", 0, false},
		{"date without zone", "Fri, 14 Mar 2025 12:00:10", 0, false},
		{"ISO 8601 is not an HTTP-date", "2025-03-14T12:00:10Z", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(c.value, t0)
			assert.Equal(t, c.wantOK, ok)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestParseRetryAfterIsRelativeToNow(t *testing.T) {
	date := "Fri, 14 Mar 2025 12:00:10 GMT"
	got, ok := ParseRetryAfter(date, t0.Add(2500*time.Millisecond))
	assert.True(t, ok)
	assert.Equal(t, 7500*time.Millisecond, got)
}

func TestCooldown(t *testing.T) {
	cases := []struct {
		value string
		want  time.Duration
	}{
		{"", DefaultCooldown},
		{"soon", DefaultCooldown},
		{"-5", DefaultCooldown},
		{"1.5", DefaultCooldown},
		{" 5", DefaultCooldown},
		{"0", 0},
		{"5", 5 * time.Second},
		{"30", 30 * time.Second},
		{"31", MaxRetryAfter},
		{"99999999999", MaxRetryAfter},
		{"99999999999999999999999", MaxRetryAfter},
		{"Fri, 14 Mar 2025 12:00:10 GMT", 10 * time.Second},
		{"Fri, 14 Mar 2025 13:00:00 GMT", MaxRetryAfter},
		{"Fri, 14 Mar 2025 11:59:00 GMT", 0},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Cooldown(c.value, t0), "Retry-After %q", c.value)
	}
}

func TestCooldownConstants(t *testing.T) {
	// The product page publishes these; the broker and the docs depend on them.
	assert.Equal(t, time.Second, DefaultCooldown)
	assert.Equal(t, 30*time.Second, MaxRetryAfter)
	assert.Equal(t, time.Second, ProbeInterval)
	assert.Equal(t, 2*time.Second, ProbeTimeout)
}
