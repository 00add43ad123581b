package hostfuncs

import (
	"context"
	"fmt"

	"github.com/plimsoll/plimsoll/abi"
	"github.com/plimsoll/plimsoll/profiles"
)

// ExtismModule and ExtismCall name the host function an Extism plugin calls the broker through:
// plimsoll_call(request block offset: i64) -> response block offset: i64, in Extism's user
// namespace. The request and response are the ABI's envelopes (preamble/ABI.md), each one
// Extism memory block.
const (
	ExtismModule = abi.ExtismModule
	ExtismCall   = abi.ExtismCall
)

// Block is an Extism memory block a plugin handed to plimsoll_call: where it is and how long the
// kernel says it is. Read copies its bytes out of the plugin's memory.
type Block struct {
	Offset, Length uint64
	Read           func() ([]byte, bool)
}

// Exchange is one plimsoll_call: it counts the call against limits.max_host_calls, refuses a
// block that is not one (offset 0, an unknown offset, a length past the memory) or that is over
// limits.max_request_bytes, and otherwise hands the envelope to the broker. It returns the
// response envelope, a 400 refusal included. Past limits.max_host_calls it returns the
// *CallLimitError (also kept in Err), and the caller must end the plugin without answering.
func (r *Session) Exchange(ctx context.Context, req Block, memSize uint64) ([]byte, error) {
	if r.calls >= r.maxCalls {
		r.err = &CallLimitError{Max: r.maxCalls}
		return nil, r.err
	}
	r.calls++
	switch {
	case req.Offset == 0 || req.Length == 0:
		return r.broker.Refuse(fmt.Sprintf("%s: offset %d is not an Extism memory block", ExtismCall, req.Offset)), nil
	case req.Offset+req.Length > memSize || req.Offset+req.Length < req.Offset:
		return r.broker.Refuse(fmt.Sprintf("%s: request block at [%d, %d) lies outside the plugin's memory (%d bytes)",
			ExtismCall, req.Offset, req.Offset+req.Length, memSize)), nil
	case int64(req.Length) > r.maxRequest || int64(req.Length) < 0:
		return r.broker.Refuse(fmt.Sprintf("request envelope is %d bytes, over limits.max_request_bytes (%s)",
			req.Length, profiles.FormatSize(r.maxRequest))), nil
	}
	raw, ok := req.Read()
	if !ok {
		return r.broker.Refuse(fmt.Sprintf("%s: request block at offset %d cannot be read", ExtismCall, req.Offset)), nil
	}
	return r.broker.CallEnvelope(ctx, raw), nil
}
