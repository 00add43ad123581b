package profiles_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/plimsoll/plimsoll/profiles"
)

func TestLimitsOrDefaultsFillsOnlyUnsetFields(t *testing.T) {
	assert.Equal(t, profiles.DefaultLimits, profiles.Limits{}.OrDefaults())

	set := profiles.Limits{RunTimeout: time.Second, Memory: 32 << 20, MaxHostCalls: 7, CallTimeout: -1}
	got := set.OrDefaults()

	assert.Equal(t, time.Second, got.RunTimeout)
	assert.Equal(t, int64(32<<20), got.Memory)
	assert.Equal(t, 7, got.MaxHostCalls)
	assert.Equal(t, profiles.DefaultLimits.CallTimeout, got.CallTimeout, "negative means unset")
	assert.Equal(t, profiles.DefaultLimits.MaxLogBytes, got.MaxLogBytes)
}
