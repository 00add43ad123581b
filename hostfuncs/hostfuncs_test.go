package hostfuncs

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental/wazerotest"
	"github.com/tetratelabs/wazero/sys"

	"github.com/plimsoll/plimsoll/abi"
	"github.com/plimsoll/plimsoll/profiles"
)

// fakeBroker answers every call with a fixed envelope and remembers what it was asked.
type fakeBroker struct {
	answer   []byte
	requests [][]byte
	refusals []string
}

func (b *fakeBroker) CallEnvelope(_ context.Context, raw []byte) []byte {
	b.requests = append(b.requests, raw)
	return b.answer
}

func (b *fakeBroker) Refuse(reason string) []byte {
	b.refusals = append(b.refusals, reason)
	return []byte(`{"status":400,"headers":{},"body":"refused"}`)
}

const memSize = 2 * wazerotest.PageSize

// guest is a fake module with two pages of memory, a fake broker and a run attached to ctx.
type guest struct {
	t      *testing.T
	mod    *wazerotest.Module
	mem    *wazerotest.Memory
	broker *fakeBroker
	run    *Session
	ctx    context.Context
}

func newGuest(t *testing.T, limits profiles.Limits) *guest {
	mem := wazerotest.NewFixedMemory(memSize)
	b := &fakeBroker{answer: []byte(`{"status":200,"headers":{},"body":"0123456789"}`)}
	r := NewSession(b, limits)
	return &guest{t: t, mod: wazerotest.NewModule(mem), mem: mem, broker: b, run: r, ctx: WithSession(context.Background(), r)}
}

func (g *guest) hostCall(reqPtr, reqLen, respPtr, respCap uint32) int32 {
	stack := []uint64{api.EncodeU32(reqPtr), api.EncodeU32(reqLen), api.EncodeU32(respPtr), api.EncodeU32(respCap)}
	hostCall(g.ctx, g.mod, stack)
	return api.DecodeI32(stack[0])
}

func (g *guest) hostResponse(ptr, capacity uint32) int32 {
	stack := []uint64{api.EncodeU32(ptr), api.EncodeU32(capacity)}
	hostResponse(g.ctx, g.mod, stack)
	return api.DecodeI32(stack[0])
}

// put writes s into guest memory at ptr and returns its length.
func (g *guest) put(ptr uint32, s string) uint32 {
	require.True(g.t, g.mem.Write(ptr, []byte(s)))
	return uint32(len(s))
}

func (g *guest) read(ptr, n uint32) string {
	b, ok := g.mem.Read(ptr, n)
	require.True(g.t, ok)
	return string(b)
}

const request = `{"method":"GET","path":"/pets/42"}`

func TestHostCallDeliversResponseThatFits(t *testing.T) {
	g := newGuest(t, profiles.DefaultLimits)
	n := g.put(100, request)

	got := g.hostCall(100, n, 4096, 1024)

	require.Equal(t, int32(len(g.broker.answer)), got)
	require.Equal(t, string(g.broker.answer), g.read(4096, uint32(got)))
	require.Equal(t, []string{request}, requestsOf(g.broker))
	require.Equal(t, 1, g.run.Calls())
	require.Equal(t, abi.ErrNoPending, g.hostResponse(4096, 1024), "a delivered response is not pending")
}

func TestHostCallGivesTheBrokerItsOwnCopy(t *testing.T) {
	g := newGuest(t, profiles.DefaultLimits)
	n := g.put(100, request)
	g.hostCall(100, n, 4096, 1024)

	g.put(100, strings.Repeat("x", int(n))) // the guest reuses its buffer

	require.Equal(t, []string{request}, requestsOf(g.broker))
}

func TestTwoStepFetch(t *testing.T) {
	g := newGuest(t, profiles.DefaultLimits)
	n := g.put(100, request)
	want := string(g.broker.answer)
	size := uint32(len(want))

	// Given a response buffer too small for the answer
	got := g.hostCall(100, n, 4096, 4)

	// Then host_call returns the size and writes nothing
	require.Equal(t, int32(size), got)
	require.Equal(t, strings.Repeat("\x00", int(size)), g.read(4096, size))

	// When the guest offers a buffer still too small, or out of bounds, the response is kept
	require.Equal(t, abi.ErrTooSmall, g.hostResponse(4096, size-1))
	require.Equal(t, abi.ErrBounds, g.hostResponse(memSize-4, size))
	require.Equal(t, abi.ErrBounds, g.hostResponse(0xffffffff, 2), "ptr+cap wraps around 2^32")

	// And a buffer of the right size receives it, once
	require.Equal(t, int32(size), g.hostResponse(8192, size))
	require.Equal(t, want, g.read(8192, size))
	require.Equal(t, abi.ErrNoPending, g.hostResponse(8192, size))
}

func TestUnfetchedResponseIsDroppedByTheNextCall(t *testing.T) {
	g := newGuest(t, profiles.DefaultLimits)
	n := g.put(100, request)

	require.Positive(t, g.hostCall(100, n, 4096, 0))
	g.broker.answer = []byte(`{"status":204,"headers":{},"body":""}`)
	got := g.hostCall(100, n, 4096, 1024)

	require.Equal(t, int32(len(g.broker.answer)), got)
	require.Equal(t, abi.ErrNoPending, g.hostResponse(4096, 1024))
}

func TestNoPendingBeforeAnyCall(t *testing.T) {
	g := newGuest(t, profiles.DefaultLimits)
	require.Equal(t, abi.ErrNoPending, g.hostResponse(0, 16))
}

func TestOutOfBoundsIsRefusedAndRecorded(t *testing.T) {
	tests := []struct {
		name                             string
		reqPtr, reqLen, respPtr, respCap uint32
		reason                           string
	}{
		{"request past the end", memSize - 10, 11, 0, 16, "request envelope at [131062, 131073) lies outside"},
		{"request pointer past the end", memSize + 1, 0, 0, 16, "request envelope"},
		{"request ptr+len wraps around 2^32", 0xfffffff0, 0x20, 0, 16, "request envelope at [4294967280, 4294967312)"},
		{"response buffer past the end", 0, 2, memSize - 1, 2, "response buffer at [131071, 131073)"},
		{"response ptr+cap wraps around 2^32", 0, 2, 0x10, 0xfffffff8, "response buffer"},
		{"huge length", 0, 0xffffffff, 0, 16, "request envelope at [0, 4294967295)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGuest(t, profiles.DefaultLimits)

			got := g.hostCall(tc.reqPtr, tc.reqLen, tc.respPtr, tc.respCap)

			require.Equal(t, abi.ErrBounds, got)
			require.Empty(t, g.broker.requests, "nothing reaches the broker's call path")
			require.Len(t, g.broker.refusals, 1, "the call is recorded as invalid")
			require.Contains(t, g.broker.refusals[0], tc.reason)
			require.Contains(t, g.broker.refusals[0], "outside guest memory (131072 bytes)")
			require.Equal(t, abi.ErrNoPending, g.hostResponse(0, 1024), "nothing is pending after a bounds error")
		})
	}
}

func TestEmptyRangesAtTheEndAreInBounds(t *testing.T) {
	g := newGuest(t, profiles.DefaultLimits)
	got := g.hostCall(memSize, 0, memSize, 0)
	require.Equal(t, int32(len(g.broker.answer)), got, "the response is pending")
	require.Equal(t, []string{""}, requestsOf(g.broker), "an empty envelope is the broker's to refuse")
}

func TestOverCapRequestIsRefusedWithoutCopying(t *testing.T) {
	limits := profiles.DefaultLimits
	limits.MaxRequestBytes = 1024
	g := newGuest(t, limits)
	const reqLen = memSize - 4096 // in bounds, 127 times over the cap

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := g.hostCall(0, reqLen, memSize-4096, 4096)
	runtime.ReadMemStats(&after)

	require.Empty(t, g.broker.requests)
	require.Equal(t, []string{"request envelope is 126976 bytes, over limits.max_request_bytes (1KiB)"}, g.broker.refusals)
	require.Positive(t, got, "the refusal is delivered as a response envelope")
	require.Contains(t, g.read(memSize-4096, uint32(got)), `"status":400`)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(reqLen/4), "the envelope was not copied")
}

func TestRequestAtTheCapIsForwarded(t *testing.T) {
	limits := profiles.DefaultLimits
	limits.MaxRequestBytes = 1024
	g := newGuest(t, limits)
	g.hostCall(0, 1024, 4096, 1024)
	require.Len(t, g.broker.requests, 1)
	require.Empty(t, g.broker.refusals)
}

func TestMaxHostCallsStopsTheGuest(t *testing.T) {
	limits := profiles.DefaultLimits
	limits.MaxHostCalls = 2
	g := newGuest(t, limits)
	n := g.put(100, request)
	require.Positive(t, g.hostCall(100, n, 4096, 1024))
	require.Equal(t, abi.ErrBounds, g.hostCall(memSize, 1, 0, 0), "refused calls count too")

	var exit *sys.ExitError
	func() {
		defer func() {
			err, _ := recover().(error)
			require.ErrorAs(t, err, &exit)
		}()
		g.hostCall(100, n, 4096, 1024)
		t.Fatal("host_call returned over the limit")
	}()

	require.Equal(t, LimitExitCode, exit.ExitCode())
	require.True(t, g.mod.IsClosed())
	var limit *CallLimitError
	require.True(t, errors.As(g.run.Err(), &limit))
	require.Equal(t, "host call limit limits.max_host_calls (2) reached", limit.Error())
	require.Equal(t, 2, g.run.Calls())
	require.Len(t, g.broker.requests, 1)
}

func TestNoRunInContext(t *testing.T) {
	mod := wazerotest.NewModule(wazerotest.NewFixedMemory(memSize))
	stack := []uint64{0, 2, 0, 16}
	hostCall(context.Background(), mod, stack)
	require.Equal(t, abi.ErrNoRun, api.DecodeI32(stack[0]))

	stack = []uint64{0, 16}
	hostResponse(context.Background(), mod, stack)
	require.Equal(t, abi.ErrNoRun, api.DecodeI32(stack[0]))
}

func TestNoMemory(t *testing.T) {
	b := &fakeBroker{}
	ctx := WithSession(context.Background(), NewSession(b, profiles.DefaultLimits))
	stack := []uint64{0, 0, 0, 0}
	hostCall(ctx, wazerotest.NewModule(nil), stack)
	require.Equal(t, abi.ErrBounds, api.DecodeI32(stack[0]))
	require.Len(t, b.refusals, 1)
}

func TestZeroLimitsMeanDefaults(t *testing.T) {
	r := NewSession(&fakeBroker{}, profiles.Limits{})
	require.Equal(t, profiles.DefaultLimits.MaxRequestBytes, r.maxRequest)
	require.Equal(t, profiles.DefaultLimits.MaxHostCalls, r.maxCalls)
}

func requestsOf(b *fakeBroker) []string {
	out := make([]string, len(b.requests))
	for i, r := range b.requests {
		out[i] = string(r)
	}
	return out
}
