package plimsoll

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeABI answers every call with resp, following the ABI's two-step rule.
type fakeABI struct {
	resp      []byte
	callCode  int32 // when non-zero, host_call returns it
	pending   []byte
	calls     int
	responses int
	lastCap   int
}

func (f *fakeABI) hostCall(req, buf []byte) int32 {
	f.calls++
	f.pending = nil
	if f.callCode != 0 {
		return f.callCode
	}
	f.lastCap = len(buf)
	if len(f.resp) <= len(buf) {
		copy(buf, f.resp)
		return int32(len(f.resp))
	}
	f.pending = f.resp
	return int32(len(f.resp))
}

func (f *fakeABI) hostResponse(buf []byte) int32 {
	f.responses++
	switch {
	case f.pending == nil:
		return -2
	case len(buf) < len(f.pending):
		return -3
	}
	n := copy(buf, f.pending)
	f.pending = nil
	return int32(n)
}

func TestExchangeFitsTheFirstBuffer(t *testing.T) {
	f := &fakeABI{resp: []byte(`{"status":200}`)}
	c := &conn{imports: f}
	got, err := c.exchange([]byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, f.resp, got)
	assert.Equal(t, FirstBufferSize, f.lastCap)
	assert.Zero(t, f.responses)

	// The result does not alias the shared first buffer.
	f.resp = []byte(`{"status":404}`)
	_, err = c.exchange([]byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, `{"status":200}`, string(got))
}

func TestExchangeTwoStep(t *testing.T) {
	for _, size := range []int{FirstBufferSize, FirstBufferSize + 1, 3*FirstBufferSize + 7} {
		f := &fakeABI{resp: bytes.Repeat([]byte("x"), size)}
		got, err := (&conn{imports: f}).exchange([]byte("{}"))
		require.NoError(t, err)
		assert.Len(t, got, size)
		wantSecond := 0
		if size > FirstBufferSize {
			wantSecond = 1
		}
		assert.Equal(t, wantSecond, f.responses, "size %d", size)
	}
}

func TestExchangeErrors(t *testing.T) {
	_, err := (&conn{imports: &fakeABI{callCode: -1}}).exchange([]byte("{}"))
	assert.EqualError(t, err, "plimsoll: host_call returned -1 (ERR_BOUNDS)")

	f := &fakeABI{resp: bytes.Repeat([]byte("x"), FirstBufferSize+1)}
	c := &conn{imports: brokenSecondStep{f}}
	_, err = c.exchange([]byte("{}"))
	assert.EqualError(t, err, "plimsoll: host_response returned -2 (ERR_NO_PENDING)")
}

// brokenSecondStep loses the pending response between the two steps.
type brokenSecondStep struct{ *fakeABI }

func (b brokenSecondStep) hostResponse(buf []byte) int32 {
	b.pending = nil
	return b.fakeABI.hostResponse(buf)
}
