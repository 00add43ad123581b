package profiles

import (
	"errors"
	"fmt"
	"time"

	"github.com/plimsoll/plimsoll/bulkhead"
)

// Concurrency is a profile's opt-in limit on the calls in flight to its API, shared by every run
// of the process that uses the profile (see bulkhead and broker.Limits).
type Concurrency struct {
	bulkhead.Config
	// PerRoute keys the limit by route pattern as well: each granted route has its own.
	PerRoute bool
}

var concurrencyFields = []string{"limit", "min", "max", "max_queue", "queue_timeout", "per_route"}

// concurrency reads the block; nil when the profile has none.
func (d *decoder) concurrency(v any) *Concurrency {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.fail("concurrency", "must be a mapping with limit, min, max, max_queue and queue_timeout")
		return nil
	}
	d.unknown("concurrency", m, concurrencyFields)
	c := &Concurrency{Config: bulkhead.Config{Algorithm: bulkhead.Gradient2, MaxQueue: bulkhead.DefaultMaxQueue}}
	switch lim := m["limit"].(type) {
	case nil:
	case string:
		c.Algorithm = bulkhead.Algorithm(lim)
	default:
		n, ok := d.count("concurrency.limit", lim)
		if !ok {
			return nil
		}
		if m["min"] != nil || m["max"] != nil {
			d.fail("concurrency.limit", "a fixed limit (%d) has no min or max: those bound gradient2 and aimd", n)
		}
		c.Algorithm, c.Initial = bulkhead.Fixed, n
	}
	c.Min, _ = d.count("concurrency.min", m["min"])
	c.Max, _ = d.count("concurrency.max", m["max"])
	if n, ok := d.count("concurrency.max_queue", m["max_queue"]); ok {
		c.MaxQueue = n
	}
	d.duration("concurrency.queue_timeout", m["queue_timeout"], &c.QueueTimeout)
	if pr, ok := m["per_route"]; ok {
		if c.PerRoute, ok = pr.(bool); !ok {
			d.fail("concurrency.per_route", "must be true or false, not %v", pr)
		}
	}
	if c.Algorithm == bulkhead.Fixed && c.Initial == 0 {
		d.fail("concurrency.limit", "a fixed limit must be at least 1")
		return nil
	}
	c.Config = c.Config.WithDefaults()
	if err := c.Validate(); err != nil {
		var ce *bulkhead.ConfigError
		if errors.As(err, &ce) {
			d.fail("concurrency."+ce.Field, "%s", ce.Reason)
		} else {
			d.fail("concurrency", "%v", err)
		}
		return nil
	}
	return c
}

// String renders the block as an operator would write it.
func (c *Concurrency) String() string {
	lim := string(c.Algorithm)
	if c.Algorithm == bulkhead.Fixed {
		lim = fmt.Sprint(c.Initial)
	}
	return fmt.Sprintf("limit %s, min %d, max %d, max_queue %d, queue_timeout %s, per_route %t",
		lim, c.Min, c.Max, c.MaxQueue, c.QueueTimeout.Round(time.Millisecond), c.PerRoute)
}
