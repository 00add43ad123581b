package hostfuncs

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/profiles"
)

func block(off uint64, data string) Block {
	return Block{Offset: off, Length: uint64(len(data)), Read: func() ([]byte, bool) { return []byte(data), true }}
}

// Exchange hands a good block to the broker, refuses every bad one with a reason naming it, and
// counts each call, refusals included, against limits.max_host_calls.
func TestExchange(t *testing.T) {
	b := &fakeBroker{answer: []byte(`{"status":200}`)}
	limits := profiles.DefaultLimits
	limits.MaxHostCalls, limits.MaxRequestBytes = 6, 16
	s := NewSession(b, limits)
	ctx := context.Background()

	resp, err := s.Exchange(ctx, block(64, `{"method":"GET"}`), 1<<16)
	require.NoError(t, err)
	assert.Equal(t, `{"status":200}`, string(resp))
	assert.Equal(t, [][]byte{[]byte(`{"method":"GET"}`)}, b.requests)

	for _, c := range []struct {
		blk  Block
		want string
	}{
		{Block{Offset: 0}, "plimsoll_call: offset 0 is not an Extism memory block"},
		{Block{Offset: 100}, "plimsoll_call: offset 100 is not an Extism memory block"},
		{block(1<<16-2, "{}xx"), "plimsoll_call: request block at [65534, 65538) lies outside the plugin's memory (65536 bytes)"},
		{Block{Offset: 1, Length: ^uint64(0)}, "lies outside the plugin's memory"},
		{block(64, `{"method":"GET","path":"/x"}`), "request envelope is 28 bytes, over limits.max_request_bytes (16B)"},
	} {
		resp, err := s.Exchange(ctx, c.blk, 1<<16)
		require.NoError(t, err)
		assert.Contains(t, string(resp), `"status":400`)
		assert.Contains(t, b.refusals[len(b.refusals)-1], c.want)
	}
	assert.Len(t, b.requests, 1, "no refused block reached the broker")
	assert.Equal(t, 6, s.Calls())

	_, err = s.Exchange(ctx, block(64, `{}`), 1<<16)
	var cl *CallLimitError
	require.ErrorAs(t, err, &cl)
	assert.Equal(t, 6, cl.Max)
	assert.Equal(t, err, s.Err())
}
