package profiles_test

import (
	"errors"
	"testing"

	"github.com/plimsoll/plimsoll/profiles"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPropagateTrace(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "off.yaml", "base_url: http://127.0.0.1:9/\nroutes: [GET /a]\n")
	write(t, dir, "on.yaml", "base_url: http://127.0.0.1:9/\nroutes: [GET /a]\npropagate_trace: true\n")
	write(t, dir, "bad.yaml", "base_url: http://127.0.0.1:9/\nroutes: [GET /a]\npropagate_trace: \"yes\"\n")
	p, err := profiles.Load(dir, "off")
	require.NoError(t, err)
	assert.False(t, p.PropagateTrace, "off by default")
	p, err = profiles.Load(dir, "on")
	require.NoError(t, err)
	assert.True(t, p.PropagateTrace)
	_, err = profiles.Load(dir, "bad")
	var perr *profiles.Error
	require.True(t, errors.As(err, &perr), "%v", err)
	assert.Equal(t, "propagate_trace", perr.Field)
	assert.Contains(t, perr.Reason, "must be true or false")
}
