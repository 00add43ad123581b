package hostfuncs

import (
	"context"
	"fmt"
	"math"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/plimsoll/plimsoll/abi"
	"github.com/plimsoll/plimsoll/profiles"
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

	maxInflight int

	calls      int
	pending    []byte
	hasPending bool
	err        error
	async      *concurrent // ABI v2 calls; nil until the first host_submit
}

// NewSession builds the state for one run. It uses limits.max_request_bytes and
// limits.max_host_calls; a zero cap means the default (profiles.Limits.OrDefaults).
func NewSession(b Broker, limits profiles.Limits) *Session {
	limits = limits.OrDefaults()
	return &Session{broker: b, maxRequest: limits.MaxRequestBytes, maxCalls: limits.MaxHostCalls,
		maxInflight: limits.MaxInflight}
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

// Instantiate defines the plimsoll module in r, with the functions and signatures abi.Funcs
// lists. Call it once per wazero runtime, before any guest is instantiated.
func Instantiate(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(abi.Module)
	for _, f := range abi.Funcs {
		b = b.NewFunctionBuilder().
			WithGoModuleFunction(implementations[f.Name], valueTypes(f.Params), valueTypes(f.Results)).
			WithParameterNames(f.ParamNames...).
			WithResultNames(f.ResultNames...).
			Export(f.Name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("define the %s host module: %w", abi.Module, err)
	}
	return nil
}

// implementations holds the Go function behind each of abi.Funcs.
var implementations = map[string]api.GoModuleFunc{
	abi.HostCall:     hostCall,
	abi.HostResponse: hostResponse,
	abi.HostSubmit:   hostSubmit,
	abi.HostWait:     hostWait,
	abi.HostResult:   hostResult,
}

// valueTypes converts the ABI's value types to wazero's; both use the binary format's encoding.
func valueTypes(ts []abi.ValueType) []api.ValueType {
	out := make([]api.ValueType, len(ts))
	for i, t := range ts {
		out[i] = api.ValueType(t)
	}
	return out
}

// hostCall is host_call(req_ptr, req_len, resp_ptr, resp_cap) -> i32.
func hostCall(ctx context.Context, mod api.Module, stack []uint64) {
	r := SessionFrom(ctx)
	if r == nil {
		stack[0] = api.EncodeI32(abi.ErrNoRun)
		return
	}
	n := r.call(ctx, mod, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2]), api.DecodeU32(stack[3]))
	stack[0] = api.EncodeI32(n)
}

// hostResponse is host_response(ptr, cap) -> i32.
func hostResponse(ctx context.Context, mod api.Module, stack []uint64) {
	r := SessionFrom(ctx)
	if r == nil {
		stack[0] = api.EncodeI32(abi.ErrNoRun)
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
		return abi.ErrBounds
	}
	size := uint64(mem.Size())
	if !inside(reqPtr, reqLen, size) {
		r.broker.Refuse(fmt.Sprintf("request envelope at [%d, %d) lies outside guest memory (%d bytes)",
			reqPtr, uint64(reqPtr)+uint64(reqLen), size))
		return abi.ErrBounds
	}
	if !inside(respPtr, respCap, size) {
		r.broker.Refuse(fmt.Sprintf("response buffer at [%d, %d) lies outside guest memory (%d bytes)",
			respPtr, uint64(respPtr)+uint64(respCap), size))
		return abi.ErrBounds
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
		return abi.ErrBounds
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
		return abi.ErrNoPending
	}
	mem := mod.Memory()
	if mem == nil || !inside(ptr, capacity, uint64(mem.Size())) {
		return abi.ErrBounds
	}
	n := len(r.pending)
	if uint32(n) > capacity {
		return abi.ErrTooSmall
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
