package hostfuncs

import (
	"context"
	"fmt"
	"math"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/plimsoll/plimsoll/profiles"
)

// ModuleName is the import module the guest ABI defines.
const ModuleName = "plimsoll"

// Return codes of host_call and host_response. Non-negative returns are envelope lengths.
const (
	CodeBounds    int32 = -1 // a pointer/length pair lies outside guest memory
	CodeNoPending int32 = -2 // host_response: there is no pending response
	CodeTooSmall  int32 = -3 // host_response: the buffer is smaller than the pending response
	CodeNoRun     int32 = -4 // no Session in the call's context; nothing was recorded
)

// LimitExitCode is the exit code a guest is closed with when it goes over limits.max_host_calls.
// The host reads the reason from Session.Err, not from the code.
const LimitExitCode uint32 = 0xfffffff0

// Broker is the part of a broker run that the host functions use.
type Broker interface {
	// CallEnvelope decodes a request envelope, handles the call and returns the response envelope.
	CallEnvelope(ctx context.Context, raw []byte) []byte
	// Refuse records a call that could not be decoded and returns its 400 response envelope.
	Refuse(reason string) []byte
}

// CallLimitError is recorded when a guest goes over limits.max_host_calls.
type CallLimitError struct {
	Max int
}

func (e *CallLimitError) Error() string {
	return fmt.Sprintf("host call limit limits.max_host_calls (%d) reached", e.Max)
}

// Session is the host-function state of one run: its broker, its caps, the pending response and the
// number of calls made. Attach it to the guest call's context with WithSession.
type Session struct {
	broker     Broker
	maxRequest int64
	maxCalls   int

	calls      int
	pending    []byte
	hasPending bool
	err        error
}

// NewSession builds the state for one run. It uses limits.max_request_bytes and
// limits.max_host_calls; a zero cap means the default from profiles.DefaultLimits.
func NewSession(b Broker, limits profiles.Limits) *Session {
	r := &Session{broker: b, maxRequest: limits.MaxRequestBytes, maxCalls: limits.MaxHostCalls}
	if r.maxRequest <= 0 {
		r.maxRequest = profiles.DefaultLimits.MaxRequestBytes
	}
	if r.maxCalls <= 0 {
		r.maxCalls = profiles.DefaultLimits.MaxHostCalls
	}
	return r
}

// Calls is the number of host_call invocations made so far, refused ones included.
func (r *Session) Calls() int { return r.calls }

// Err is the limit the guest was stopped for (a *CallLimitError), or nil.
func (r *Session) Err() error { return r.err }

type runKey struct{}

// WithSession returns a context that routes the guest's host calls to r. Pass it to the guest's
// exported function (run, _start) so that host_call sees it.
func WithSession(ctx context.Context, r *Session) context.Context {
	return context.WithValue(ctx, runKey{}, r)
}

// SessionFrom returns the Session attached to ctx, or nil.
func SessionFrom(ctx context.Context) *Session {
	r, _ := ctx.Value(runKey{}).(*Session)
	return r
}

// Instantiate defines the plimsoll module in r. Call it once per wazero runtime, before any guest
// is instantiated.
func Instantiate(ctx context.Context, r wazero.Runtime) error {
	i32 := api.ValueTypeI32
	_, err := r.NewHostModuleBuilder(ModuleName).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostCall), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("req_ptr", "req_len", "resp_ptr", "resp_cap").
		WithResultNames("n").
		Export("host_call").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostResponse), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("ptr", "cap").
		WithResultNames("n").
		Export("host_response").
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("define the %s host module: %w", ModuleName, err)
	}
	return nil
}

// hostCall is host_call(req_ptr, req_len, resp_ptr, resp_cap) -> i32.
func hostCall(ctx context.Context, mod api.Module, stack []uint64) {
	r := SessionFrom(ctx)
	if r == nil {
		stack[0] = api.EncodeI32(CodeNoRun)
		return
	}
	n := r.call(ctx, mod, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2]), api.DecodeU32(stack[3]))
	stack[0] = api.EncodeI32(n)
}

// hostResponse is host_response(ptr, cap) -> i32.
func hostResponse(ctx context.Context, mod api.Module, stack []uint64) {
	r := SessionFrom(ctx)
	if r == nil {
		stack[0] = api.EncodeI32(CodeNoRun)
		return
	}
	stack[0] = api.EncodeI32(r.fetch(mod, api.DecodeU32(stack[0]), api.DecodeU32(stack[1])))
}

func (r *Session) call(ctx context.Context, mod api.Module, reqPtr, reqLen, respPtr, respCap uint32) int32 {
	r.pending, r.hasPending = nil, false // an unfetched response is dropped by the next call
	if r.calls >= r.maxCalls {
		r.stop(ctx, mod)
	}
	r.calls++

	mem := mod.Memory()
	if mem == nil {
		r.broker.Refuse("the guest has no memory to exchange envelopes through")
		return CodeBounds
	}
	size := uint64(mem.Size())
	if !inside(reqPtr, reqLen, size) {
		r.broker.Refuse(fmt.Sprintf("request envelope at [%d, %d) lies outside guest memory (%d bytes)",
			reqPtr, uint64(reqPtr)+uint64(reqLen), size))
		return CodeBounds
	}
	if !inside(respPtr, respCap, size) {
		r.broker.Refuse(fmt.Sprintf("response buffer at [%d, %d) lies outside guest memory (%d bytes)",
			respPtr, uint64(respPtr)+uint64(respCap), size))
		return CodeBounds
	}

	var resp []byte
	if int64(reqLen) > r.maxRequest {
		resp = r.broker.Refuse(fmt.Sprintf("request envelope is %d bytes, over limits.max_request_bytes (%s)",
			reqLen, profiles.FormatSize(r.maxRequest)))
	} else {
		view, _ := mem.Read(reqPtr, reqLen)
		// The broker gets its own copy: the guest owns its memory again as soon as we return.
		raw := make([]byte, len(view))
		copy(raw, view)
		resp = r.broker.CallEnvelope(ctx, raw)
	}

	n := len(resp)
	if n > math.MaxInt32 {
		// No wasm32 guest could hold it, and the length cannot be returned as an i32.
		return CodeBounds
	}
	if uint32(n) <= respCap {
		mem.Write(respPtr, resp)
		return int32(n)
	}
	r.pending, r.hasPending = resp, true
	return int32(n)
}

func (r *Session) fetch(mod api.Module, ptr, capacity uint32) int32 {
	if !r.hasPending {
		return CodeNoPending
	}
	mem := mod.Memory()
	if mem == nil || !inside(ptr, capacity, uint64(mem.Size())) {
		return CodeBounds
	}
	n := len(r.pending)
	if uint32(n) > capacity {
		return CodeTooSmall
	}
	mem.Write(ptr, r.pending)
	r.pending, r.hasPending = nil, false
	return int32(n)
}

// stop ends the guest: it records the limit, closes the module so that nothing else in it runs, and
// unwinds the guest's stack the way proc_exit does.
func (r *Session) stop(ctx context.Context, mod api.Module) {
	r.err = &CallLimitError{Max: r.maxCalls}
	_ = mod.CloseWithExitCode(ctx, LimitExitCode)
	panic(sys.NewExitError(LimitExitCode))
}

// inside reports whether [ptr, ptr+n) lies in a memory of size bytes. The sum is taken in 64 bits,
// so a ptr+n that wraps around 2^32 is outside, not small.
func inside(ptr, n uint32, size uint64) bool {
	return uint64(ptr)+uint64(n) <= size
}
