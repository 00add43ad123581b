package hostfuncs

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental/wazerotest"

	"github.com/plimsoll/plimsoll/abi"
	"github.com/plimsoll/plimsoll/profiles"
)

// fuzzMemSize is the fuzzed guest's memory: two pages.
const fuzzMemSize = 2 * wazerotest.PageSize

// strictModule is a fake guest whose memory fails the test on any non-empty access outside it:
// wazerotest's memory would only return ok=false, which host functions may ignore.
type strictModule struct {
	*wazerotest.Module
	mem *strictMemory
}

func (m *strictModule) Memory() api.Memory { return m.mem }

type strictMemory struct {
	api.Memory
	t *testing.T
}

func (m *strictMemory) check(op string, offset, n uint32) {
	if n > 0 && uint64(offset)+uint64(n) > uint64(m.Size()) {
		m.t.Fatalf("%s of [%d, %d) outside a memory of %d bytes", op, offset, uint64(offset)+uint64(n), m.Size())
	}
}

func (m *strictMemory) Read(offset, n uint32) ([]byte, bool) {
	m.check("read", offset, n)
	return m.Memory.Read(offset, n)
}

func (m *strictMemory) Write(offset uint32, b []byte) bool {
	m.check("write", offset, uint32(len(b)))
	return m.Memory.Write(offset, b)
}

func (m *strictMemory) WriteString(offset uint32, s string) bool {
	m.check("write", offset, uint32(len(s)))
	return m.Memory.WriteString(offset, s)
}

// FuzzHostCallBounds drives host_call and then host_response with arbitrary pointers, lengths
// and capacities, a broker answer of arbitrary size and an arbitrary limits.max_request_bytes.
// Whatever the guest passes, the host never panics and never reads or writes outside guest
// memory; a range that does not fit is ERR_BOUNDS and recorded as a refusal; an envelope over the
// cap reaches the broker's call path not at all (it is never copied); an in-bounds envelope
// reaches it byte for byte; and the only bytes of guest memory that change are the response's,
// written exactly once where the guest asked. Seeds: testdata/fuzz/FuzzHostCallBounds.
func FuzzHostCallBounds(f *testing.F) {
	f.Fuzz(func(t *testing.T, reqPtr, reqLen, respPtr, respCap, fetchPtr, fetchCap, answerLen uint32, maxRequest uint16) {
		mem := wazerotest.NewFixedMemory(fuzzMemSize)
		for i := range mem.Bytes {
			mem.Bytes[i] = byte(i*7 + 1)
		}
		before := bytes.Clone(mem.Bytes)
		b := &fakeBroker{answer: bytes.Repeat([]byte{'A'}, int(answerLen%(3*wazerotest.PageSize)))}
		limits := profiles.DefaultLimits
		limits.MaxRequestBytes = int64(maxRequest) + 1
		run := NewSession(b, limits)
		mod := &strictModule{Module: wazerotest.NewModule(mem)}
		mod.mem = &strictMemory{Memory: mod.Module.Memory(), t: t}
		ctx := WithSession(context.Background(), run)

		stack := []uint64{api.EncodeU32(reqPtr), api.EncodeU32(reqLen), api.EncodeU32(respPtr), api.EncodeU32(respCap)}
		hostCall(ctx, mod, stack)
		n := api.DecodeI32(stack[0])

		// What the call did.
		var want []byte // the response envelope, when there is one
		switch {
		case !inside(reqPtr, reqLen, fuzzMemSize) || !inside(respPtr, respCap, fuzzMemSize):
			if n != abi.ErrBounds || len(b.requests) != 0 || len(b.refusals) != 1 {
				t.Fatalf("out of bounds: got %d, %d requests, %d refusals", n, len(b.requests), len(b.refusals))
			}
			requireUnchanged(t, before, mem.Bytes, 0, 0)
		case int64(reqLen) > limits.MaxRequestBytes:
			if len(b.requests) != 0 || len(b.refusals) != 1 {
				t.Fatalf("over the cap: %d requests reached the broker, %d refusals", len(b.requests), len(b.refusals))
			}
			want = b.Refuse("") // the fake's fixed refusal envelope
		default:
			if len(b.requests) != 1 || len(b.refusals) != 0 {
				t.Fatalf("in bounds: %d requests, %d refusals", len(b.requests), len(b.refusals))
			}
			if !bytes.Equal(b.requests[0], before[reqPtr:reqPtr+reqLen]) {
				t.Fatalf("the broker got other bytes than the guest's [%d, %d)", reqPtr, reqPtr+reqLen)
			}
			want = b.answer
		}
		if want == nil {
			if got := fetch(ctx, mod, fetchPtr, fetchCap); got != abi.ErrNoPending {
				t.Fatalf("host_response after a bounds error: %d, want ERR_NO_PENDING", got)
			}
			return
		}
		if int(n) != len(want) {
			t.Fatalf("host_call returned %d, want the envelope's length %d", n, len(want))
		}
		if uint32(n) <= respCap {
			requireUnchanged(t, before, mem.Bytes, respPtr, uint32(n))
			if !bytes.Equal(mem.Bytes[respPtr:respPtr+uint32(n)], want) {
				t.Fatal("the response was not written where the guest asked")
			}
			if got := fetch(ctx, mod, fetchPtr, fetchCap); got != abi.ErrNoPending {
				t.Fatalf("host_response after a delivered response: %d, want ERR_NO_PENDING", got)
			}
			return
		}

		// The response is pending; fetch it.
		requireUnchanged(t, before, mem.Bytes, 0, 0)
		got := fetch(ctx, mod, fetchPtr, fetchCap)
		switch {
		case !inside(fetchPtr, fetchCap, fuzzMemSize):
			if got != abi.ErrBounds {
				t.Fatalf("host_response out of bounds: %d, want ERR_BOUNDS", got)
			}
		case fetchCap < uint32(n):
			if got != abi.ErrTooSmall {
				t.Fatalf("host_response into %d bytes for %d: %d, want ERR_TOO_SMALL", fetchCap, n, got)
			}
		default:
			if got != n {
				t.Fatalf("host_response returned %d, want %d", got, n)
			}
			requireUnchanged(t, before, mem.Bytes, fetchPtr, uint32(n))
			if !bytes.Equal(mem.Bytes[fetchPtr:fetchPtr+uint32(n)], want) {
				t.Fatal("the pending response was not written where the guest asked")
			}
			if again := fetch(ctx, mod, fetchPtr, fetchCap); again != abi.ErrNoPending {
				t.Fatalf("a fetched response was delivered twice: %d", again)
			}
			return
		}
		requireUnchanged(t, before, mem.Bytes, 0, 0)
		// A failed fetch keeps the response for a fetch that fits.
		got = fetch(ctx, mod, 0, fuzzMemSize)
		switch {
		case uint32(n) > fuzzMemSize:
			if got != abi.ErrTooSmall {
				t.Fatalf("host_response of %d bytes into all of memory: %d, want ERR_TOO_SMALL", n, got)
			}
		case got != n || !bytes.Equal(mem.Bytes[:n], want):
			t.Fatalf("after a failed fetch, host_response returned %d, want the kept response (%d bytes)", got, n)
		}
	})
}

func fetch(ctx context.Context, mod api.Module, ptr, capacity uint32) int32 {
	stack := []uint64{api.EncodeU32(ptr), api.EncodeU32(capacity)}
	hostResponse(ctx, mod, stack)
	return api.DecodeI32(stack[0])
}

// requireUnchanged checks that memory differs from before only inside [at, at+n).
func requireUnchanged(t *testing.T, before, after []byte, at, n uint32) {
	t.Helper()
	if !bytes.Equal(before[:at], after[:at]) || !bytes.Equal(before[at+n:], after[at+n:]) {
		t.Fatalf("guest memory changed outside [%d, %d)", at, at+n)
	}
}
