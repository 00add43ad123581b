package bulkhead

import (
	"errors"
	"fmt"
	"time"
)

// Algorithm names how a bulkhead learns its limit.
type Algorithm string

const (
	// Fixed never changes the limit: Config.Initial calls at once.
	Fixed Algorithm = "fixed"
	// AIMD adds one to the limit per limit's worth of fast completions and cuts it by a tenth,
	// at most once per round trip, when a call is slower than 1.3× the baseline or overloaded.
	AIMD Algorithm = "aimd"
	// Gradient2 has no threshold: it scales the limit by the ratio of the long baseline to the
	// current (median) latency, plus a small headroom; it moves up slowly and down fast.
	Gradient2 Algorithm = "gradient2"
)

// Defaults of a Config's zero fields (the example profile).
const (
	DefaultMin          = 2
	DefaultMax          = 64
	DefaultMaxQueue     = 128
	DefaultQueueTimeout = 2 * time.Second
	// MaxLimit bounds Max: each admitted call holds a connection and a goroutine.
	MaxLimit = 4096
)

// Config is a bulkhead's parameters. Use WithDefaults, then Validate.
type Config struct {
	Algorithm    Algorithm
	Initial      int // the fixed limit, or where an adaptive one starts (default Min)
	Min, Max     int
	MaxQueue     int           // calls waiting for a slot; 0 refuses at once when full
	QueueTimeout time.Duration // a normal call's sojourn bound; scaled per tier
}

// ErrConfig is matched (errors.Is) by every error of Validate.
var ErrConfig = errors.New("invalid concurrency limit")

// ConfigError names the parameter that is wrong.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string        { return e.Field + ": " + e.Reason }
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// WithDefaults fills zero fields. A fixed limit is its own min and max.
func (c Config) WithDefaults() Config {
	if c.Algorithm == "" {
		c.Algorithm = Gradient2
	}
	if c.QueueTimeout == 0 {
		c.QueueTimeout = DefaultQueueTimeout
	}
	if c.Algorithm == Fixed {
		c.Min, c.Max = c.Initial, c.Initial
		return c
	}
	if c.Min == 0 {
		c.Min = DefaultMin
	}
	if c.Max == 0 {
		c.Max = max(DefaultMax, c.Min)
	}
	if c.Initial == 0 {
		c.Initial = c.Min
	}
	return c
}

// Validate says which parameter is out of range.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case c.Algorithm != Fixed && c.Algorithm != AIMD && c.Algorithm != Gradient2:
		return bad("limit", "%q is not gradient2, aimd or a whole number", c.Algorithm)
	case c.Algorithm == Fixed && (c.Initial < 1 || c.Initial > MaxLimit):
		return bad("limit", "a fixed limit must be from 1 to %d, not %d", MaxLimit, c.Initial)
	case c.Min < 1 || c.Min > MaxLimit:
		return bad("min", "must be from 1 to %d, not %d", MaxLimit, c.Min)
	case c.Max < c.Min || c.Max > MaxLimit:
		return bad("max", "must be from min (%d) to %d, not %d", c.Min, MaxLimit, c.Max)
	case c.Initial < c.Min || c.Initial > c.Max:
		return bad("limit", "must be from min (%d) to max (%d), not %d", c.Min, c.Max, c.Initial)
	case c.MaxQueue < 0 || c.MaxQueue > 1<<20:
		return bad("max_queue", "must be from 0 to %d, not %d", 1<<20, c.MaxQueue)
	case c.QueueTimeout <= 0:
		return bad("queue_timeout", "must be positive, not %s", c.QueueTimeout)
	}
	return nil
}
