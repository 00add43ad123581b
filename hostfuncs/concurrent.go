package hostfuncs

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/plimsoll/plimsoll/abi"
	"github.com/plimsoll/plimsoll/profiles"
)

// Starter is a Broker that takes a call's decisions when it is submitted and does its I/O later
// (ABI v2), so that the trace's seq, the breaker and the budget follow submission order however
// the calls end. The host adapts *broker.Broker to it; with a Broker that is not one, calls are
// decided as they reach it.
type Starter interface {
	StartEnvelope(raw []byte) Pending
}

// Pending is a started call: its decisions are taken, and CompleteEnvelope does its I/O and
// returns the encoded response envelope.
type Pending interface {
	CompleteEnvelope(ctx context.Context) []byte
}

// answeredPending is a Pending that can say it was answered at submission (denied, invalid,
// shed: no I/O left), as *broker.Started does; such a call completes inside host_submit.
type answeredPending interface {
	Answered() bool
}

// concurrent is a run's ABI v2 calls: those in flight, and those complete but not yet read.
// Both count against limits.max_inflight, which so bounds the responses the host holds.
type concurrent struct {
	ctx    context.Context // the calls': the run's, until Session.Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	signal chan struct{} // holds a token when a call has completed since the last look

	mu         sync.Mutex
	next       int32
	held       int              // in flight, or complete and unread
	done       map[int32][]byte // complete, unread: the response envelopes
	unreported []int32          // complete, not yet returned by host_wait, in order of completion
}

func newConcurrent(ctx context.Context) *concurrent {
	ctx, cancel := context.WithCancel(ctx)
	return &concurrent{ctx: ctx, cancel: cancel, signal: make(chan struct{}, 1), done: map[int32][]byte{}}
}

// Close cancels the run's calls still in flight and waits for them, so the broker has recorded
// every call before the run's audit line is written. Call it once the guest has returned.
func (r *Session) Close() {
	if c := r.async; c != nil {
		c.cancel()
		c.wg.Wait()
	}
}

// hostSubmit is host_submit(req_ptr, req_len) -> i32.
func hostSubmit(ctx context.Context, mod api.Module, stack []uint64) {
	r := SessionFrom(ctx)
	if r == nil {
		stack[0] = api.EncodeI32(abi.ErrNoRun)
		return
	}
	stack[0] = api.EncodeI32(r.submit(ctx, mod, api.DecodeU32(stack[0]), api.DecodeU32(stack[1])))
}

// hostWait is host_wait(ids_ptr, ids_cap, timeout_ms) -> i32.
func hostWait(ctx context.Context, mod api.Module, stack []uint64) {
	r := SessionFrom(ctx)
	if r == nil {
		stack[0] = api.EncodeI32(abi.ErrNoRun)
		return
	}
	stack[0] = api.EncodeI32(r.wait(ctx, mod, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])))
}

// hostResult is host_result(id, ptr, cap) -> i32.
func hostResult(ctx context.Context, mod api.Module, stack []uint64) {
	r := SessionFrom(ctx)
	if r == nil {
		stack[0] = api.EncodeI32(abi.ErrNoRun)
		return
	}
	stack[0] = api.EncodeI32(r.result(mod, api.DecodeI32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])))
}

// submit starts one call and returns its id. The request is read, copied and numbered before
// host_submit returns; the broker handles it on a goroutine of its own.
func (r *Session) submit(ctx context.Context, mod api.Module, reqPtr, reqLen uint32) int32 {
	if r.async == nil {
		r.async = newConcurrent(ctx)
	}
	c := r.async
	c.mu.Lock()
	full := c.held >= r.maxInflight
	c.mu.Unlock()
	if full {
		return abi.ErrInflight // no call is made: the guest waits for one and submits again
	}
	if r.calls >= r.maxCalls {
		r.stop(ctx, mod)
	}
	r.calls++

	mem := mod.Memory()
	if mem == nil || !inside(reqPtr, reqLen, uint64(mem.Size())) {
		r.broker.Refuse(fmt.Sprintf("request envelope at [%d, %d) lies outside guest memory",
			reqPtr, uint64(reqPtr)+uint64(reqLen)))
		return abi.ErrBounds
	}
	var raw []byte
	if int64(reqLen) <= r.maxRequest {
		view, _ := mem.Read(reqPtr, reqLen)
		raw = append([]byte{}, view...) // the guest owns its memory again once we return; never nil, even empty
	}
	call, now := r.numbered(reqLen, raw)

	c.mu.Lock()
	c.next++
	id := c.next
	c.held++
	c.mu.Unlock()
	if now { // no I/O to overlap: a goroutine and its wake-up would cost more than the answer
		c.complete(id, call(c.ctx))
		return id
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.complete(id, call(c.ctx))
	}()
	return id
}

// numbered takes the call's place and decisions now and returns what handles it later, and
// whether that is answered already (no I/O left). An envelope over the cap is refused now.
func (r *Session) numbered(reqLen uint32, raw []byte) (call func(context.Context) []byte, answered bool) {
	if raw == nil {
		resp := r.broker.Refuse(fmt.Sprintf("request envelope is %d bytes, over limits.max_request_bytes (%s)",
			reqLen, profiles.FormatSize(r.maxRequest)))
		return func(context.Context) []byte { return resp }, true
	}
	if s, ok := r.broker.(Starter); ok {
		started := s.StartEnvelope(raw)
		a, ok := started.(answeredPending)
		return started.CompleteEnvelope, ok && a.Answered()
	}
	return func(ctx context.Context) []byte { return r.broker.CallEnvelope(ctx, raw) }, false
}

func (c *concurrent) complete(id int32, resp []byte) {
	c.mu.Lock()
	c.done[id] = resp
	c.unreported = append(c.unreported, id)
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// wait blocks until at least one call has completed that host_wait has not returned yet, the
// timeout passes, or the run ends; it writes the ids (u32, little-endian) and returns how many.
// 0 means nothing completed in time, or nothing is in flight to wait for.
func (r *Session) wait(ctx context.Context, mod api.Module, idsPtr, idsCap, timeoutMs uint32) int32 {
	mem := mod.Memory()
	if mem == nil || !inside(idsPtr, idsCap, uint64(mem.Size())) {
		return abi.ErrBounds
	}
	if idsCap < 4 {
		return abi.ErrTooSmall
	}
	c := r.async
	if c == nil {
		return 0
	}
	var timeout <-chan time.Time
	if timeoutMs != abi.WaitForever {
		t := time.NewTimer(time.Duration(timeoutMs) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	for {
		c.mu.Lock()
		n := min(len(c.unreported), int(idsCap/4))
		ids := c.unreported[:n:n]
		c.unreported = c.unreported[n:]
		waiting := c.held - len(c.done) // in flight
		c.mu.Unlock()
		if n > 0 {
			buf := make([]byte, 4*n)
			for i, id := range ids {
				binary.LittleEndian.PutUint32(buf[4*i:], uint32(id))
			}
			mem.Write(idsPtr, buf)
			return int32(n)
		}
		if waiting == 0 {
			return 0
		}
		select {
		case <-c.signal:
		case <-timeout:
			return 0
		case <-ctx.Done():
			return 0
		}
	}
}

// result copies a completed call's response envelope to [ptr, ptr+cap) and forgets it. When it
// does not fit, nothing is written and the length is returned: the guest makes room and asks
// again.
func (r *Session) result(mod api.Module, id int32, ptr, capacity uint32) int32 {
	c := r.async
	if c == nil {
		return abi.ErrUnknown
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	resp, ok := c.done[id]
	if !ok {
		return abi.ErrUnknown
	}
	mem := mod.Memory()
	if mem == nil || !inside(ptr, capacity, uint64(mem.Size())) {
		return abi.ErrBounds
	}
	n := len(resp)
	if n > math.MaxInt32 {
		return abi.ErrBounds
	}
	if uint32(n) > capacity {
		return int32(n)
	}
	mem.Write(ptr, resp)
	delete(c.done, id)
	c.held--
	return int32(n)
}
