package profiles_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/bulkhead"
	"github.com/plimsoll/plimsoll/profiles"
)

func loadWith(t *testing.T, block string) (*profiles.Profile, error) {
	t.Helper()
	return profiles.LoadFile(write(t, t.TempDir(), "p.yaml", profileYAML(map[string]string{"concurrency": block})))
}

func TestConcurrencyBlock(t *testing.T) {
	p, err := loadWith(t, "")
	require.NoError(t, err)
	assert.Nil(t, p.Concurrency, "off unless the profile opts in")

	p, err = loadWith(t, "concurrency:\n  limit: gradient2\n  min: 2\n  max: 64\n  max_queue: 128\n  queue_timeout: 2s")
	require.NoError(t, err)
	assert.Equal(t, bulkhead.Config{Algorithm: bulkhead.Gradient2, Initial: 2, Min: 2, Max: 64, MaxQueue: 128,
		QueueTimeout: 2 * time.Second}, p.Concurrency.Config)

	p, err = loadWith(t, "concurrency:\n  limit: 16\n  per_route: true")
	require.NoError(t, err)
	assert.Equal(t, bulkhead.Config{Algorithm: bulkhead.Fixed, Initial: 16, Min: 16, Max: 16,
		MaxQueue: bulkhead.DefaultMaxQueue, QueueTimeout: bulkhead.DefaultQueueTimeout}, p.Concurrency.Config)
	assert.True(t, p.Concurrency.PerRoute)
	assert.Equal(t, "limit 16, min 16, max 16, max_queue 128, queue_timeout 2s, per_route true", p.Concurrency.String())

	p, err = loadWith(t, "concurrency:\n  limit: aimd")
	require.NoError(t, err)
	assert.Equal(t, bulkhead.AIMD, p.Concurrency.Algorithm)
	assert.Equal(t, bulkhead.DefaultMin, p.Concurrency.Min)
	assert.Equal(t, bulkhead.DefaultMax, p.Concurrency.Max)
}

func TestConcurrencyRefusals(t *testing.T) {
	for _, tc := range []struct{ block, field, reason string }{
		{"concurrency: 16", "concurrency", "must be a mapping with limit, min, max, max_queue and queue_timeout"},
		{"concurrency:\n  limits: 16", "concurrency.limits", "unknown field (known: limit, min, max, max_queue, queue_timeout, per_route)"},
		{"concurrency:\n  limit: vegas", "concurrency.limit", `"vegas" is not gradient2, aimd or a whole number`},
		{"concurrency:\n  limit: 0", "concurrency.limit", "a fixed limit must be at least 1"},
		{"concurrency:\n  limit: 2.5", "concurrency.limit", "must be a non-negative whole number, not 2.5"},
		{"concurrency:\n  limit: 8\n  max: 16", "concurrency.limit", "a fixed limit (8) has no min or max: those bound gradient2 and aimd"},
		{"concurrency:\n  min: 10\n  max: 4", "concurrency.max", "must be from min (10) to 4096, not 4"},
		{"concurrency:\n  max: 5000", "concurrency.max", "must be from min (2) to 4096, not 5000"},
		{"concurrency:\n  queue_timeout: soon", "concurrency.queue_timeout", `"soon" is not a positive duration such as 30s or 500ms`},
		{"concurrency:\n  max_queue: -3", "concurrency.max_queue", "must be a non-negative whole number, not -3"},
		{"concurrency:\n  per_route: yes please", "concurrency.per_route", "must be true or false, not yes please"},
	} {
		p, err := loadWith(t, tc.block)
		assert.Nil(t, p, tc.block)
		var pe *profiles.Error
		if assert.ErrorAs(t, err, &pe, tc.block) {
			assert.Equal(t, tc.field, pe.Field, tc.block)
			assert.Equal(t, tc.reason, pe.Reason, tc.block)
		}
	}
}
