package quickjs_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	jsguest "github.com/plimsoll/plimsoll/guests/quickjs"
	"github.com/plimsoll/plimsoll/internal/testcache"
)

// This file is a test-only stand-in for the real host: WASI with real clocks, sleep and
// randomness, and a scripted plimsoll module that records request envelopes and answers with
// scripted response envelopes, following preamble/ABI.md (v1's host_call, and v2's
// host_submit/host_wait/host_result, whose calls complete as they are submitted).

// guestRuntime is the wazero runtime and the compiled JS guest, shared by every test in the
// package: compiling goja takes seconds cold, and a fraction of a second from the cache.
var guestRuntime = sync.OnceValues(func() (*guest, error) {
	ctx := experimental.WithCompilationWorkers(context.Background(), 2)
	cache, err := wazero.NewCompilationCacheWithDir(testcache.Dir())
	if err != nil {
		return nil, err
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(cache).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(4096)) // 256 MiB
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return nil, err
	}
	if _, err := r.NewHostModuleBuilder("plimsoll").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostCall),
			[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32},
			[]api.ValueType{api.ValueTypeI32}).
		Export("host_call").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostResponse),
			[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32},
			[]api.ValueType{api.ValueTypeI32}).
		Export("host_response").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostSubmit),
			[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32},
			[]api.ValueType{api.ValueTypeI32}).
		Export("host_submit").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostWait),
			[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32},
			[]api.ValueType{api.ValueTypeI32}).
		Export("host_wait").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostResult),
			[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32},
			[]api.ValueType{api.ValueTypeI32}).
		Export("host_result").
		Instantiate(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	compiled, err := r.CompileModule(ctx, jsguest.Wasm())
	if err != nil {
		return nil, err
	}
	return &guest{r: r, compiled: compiled, compileTime: time.Since(start)}, nil
})

type guest struct {
	r           wazero.Runtime
	compiled    wazero.CompiledModule
	compileTime time.Duration
}

func TestMain(m *testing.M) {
	code := m.Run()
	if g, err := guestRuntime(); err == nil {
		g.r.Close(context.Background())
	}
	os.Exit(code)
}

// scriptedHost answers host_call for one instance. respond gets the request envelope and
// returns the response envelope; the default answers 200 with an empty JSON object.
type scriptedHost struct {
	respond func(req string) string

	requests  []string
	fetched   int // responses delivered in two steps (host_response, or host_result asked again)
	pending   []byte
	respondMu sync.Mutex

	// ABI v2: calls complete when submitted; host_wait reports them in order. With maxHeld
	// set, host_submit answers ERR_INFLIGHT while that many responses are unread.
	maxHeld    int
	refused    int // host_submit calls answered ERR_INFLIGHT
	next       int32
	done       map[int32][]byte
	unreported []int32
	tooBig     map[int32]bool // the first host_result did not fit
}

type hostKey struct{}

func hostFrom(ctx context.Context) *scriptedHost {
	h, _ := ctx.Value(hostKey{}).(*scriptedHost)
	return h
}

// hostCall implements plimsoll.host_call(req_ptr, req_len, resp_ptr, resp_cap) -> i32.
func hostCall(ctx context.Context, mod api.Module, stack []uint64) {
	reqPtr, reqLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	respPtr, respCap := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	h := hostFrom(ctx)
	h.respondMu.Lock()
	defer h.respondMu.Unlock()
	h.pending = nil
	req, ok := mod.Memory().Read(reqPtr, reqLen)
	if !ok {
		stack[0] = api.EncodeI32(-1)
		return
	}
	resp := h.respondTo(string(req)) // Read aliases guest memory: string copies it
	if uint32(len(resp)) <= respCap {
		if !mod.Memory().Write(respPtr, resp) {
			stack[0] = api.EncodeI32(-1)
			return
		}
	} else {
		h.pending = resp
	}
	stack[0] = api.EncodeI32(int32(len(resp)))
}

// respondTo records a request envelope and returns its scripted response.
func (h *scriptedHost) respondTo(reqText string) []byte {
	h.requests = append(h.requests, reqText)
	if h.respond != nil {
		return []byte(h.respond(reqText))
	}
	return []byte(`{"status":200,"headers":{},"body":"{}"}`)
}

// hostSubmit implements plimsoll.host_submit(req_ptr, req_len) -> i32: the call completes at once.
func hostSubmit(ctx context.Context, mod api.Module, stack []uint64) {
	reqPtr, reqLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	h := hostFrom(ctx)
	h.respondMu.Lock()
	defer h.respondMu.Unlock()
	req, ok := mod.Memory().Read(reqPtr, reqLen)
	if !ok {
		stack[0] = api.EncodeI32(-1)
		return
	}
	if h.maxHeld > 0 && len(h.done) >= h.maxHeld {
		h.refused++
		stack[0] = api.EncodeI32(-5)
		return
	}
	resp := h.respondTo(string(req))
	if h.done == nil {
		h.done, h.tooBig = map[int32][]byte{}, map[int32]bool{}
	}
	h.next++
	h.done[h.next] = resp
	h.unreported = append(h.unreported, h.next)
	stack[0] = api.EncodeI32(h.next)
}

// hostWait implements plimsoll.host_wait(ids_ptr, ids_cap, timeout_ms) -> i32. Every call has
// completed when it was submitted, so it never blocks.
func hostWait(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, capacity := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	h := hostFrom(ctx)
	h.respondMu.Lock()
	defer h.respondMu.Unlock()
	n := min(len(h.unreported), int(capacity/4))
	for i, id := range h.unreported[:n] {
		if !mod.Memory().WriteUint32Le(ptr+uint32(4*i), uint32(id)) {
			stack[0] = api.EncodeI32(-1)
			return
		}
	}
	h.unreported = h.unreported[n:]
	stack[0] = api.EncodeI32(int32(n))
}

// hostResult implements plimsoll.host_result(id, ptr, cap) -> i32.
func hostResult(ctx context.Context, mod api.Module, stack []uint64) {
	id, ptr, capacity := api.DecodeI32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	h := hostFrom(ctx)
	h.respondMu.Lock()
	defer h.respondMu.Unlock()
	resp, ok := h.done[id]
	switch {
	case !ok:
		stack[0] = api.EncodeI32(-6)
	case uint32(len(resp)) > capacity:
		h.tooBig[id] = true
		stack[0] = api.EncodeI32(int32(len(resp)))
	case !mod.Memory().Write(ptr, resp):
		stack[0] = api.EncodeI32(-1)
	default:
		if h.tooBig[id] {
			h.fetched++
		}
		delete(h.done, id)
		stack[0] = api.EncodeI32(int32(len(resp)))
	}
}

// hostResponse implements plimsoll.host_response(ptr, cap) -> i32.
func hostResponse(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, capacity := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	h := hostFrom(ctx)
	h.respondMu.Lock()
	defer h.respondMu.Unlock()
	switch {
	case h.pending == nil:
		stack[0] = api.EncodeI32(-2)
	case capacity < uint32(len(h.pending)):
		stack[0] = api.EncodeI32(-3)
	case !mod.Memory().Write(ptr, h.pending):
		stack[0] = api.EncodeI32(-1)
	default:
		stack[0] = api.EncodeI32(int32(len(h.pending)))
		h.pending = nil
		h.fetched++
	}
}

// runInput is the JSON the runtime reads on stdin.
type runInput struct {
	Tool     string `json:"tool"`
	Input    any    `json:"input,omitempty"`
	Preamble string `json:"preamble,omitempty"`
	Name     string `json:"name,omitempty"`
}

type runResult struct {
	code   int32
	stdout string
	stderr string
	host   *scriptedHost
}

// instance is a fresh, initialised instance of the JS guest, ready for one run.
type instance struct {
	mod    api.Module
	stdin  *bytes.Buffer
	stdout *bytes.Buffer
	stderr *bytes.Buffer
}

func newInstance(tb testing.TB) *instance {
	tb.Helper()
	g, err := guestRuntime()
	if err != nil {
		tb.Fatalf("compiling the JS guest: %v", err)
	}
	in := &instance{stdin: new(bytes.Buffer), stdout: new(bytes.Buffer), stderr: new(bytes.Buffer)}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStdin(in.stdin).
		WithStdout(in.stdout).
		WithStderr(in.stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithRandSource(rand.Reader).
		WithStartFunctions("_initialize")
	in.mod, err = g.r.InstantiateModule(context.Background(), g.compiled, cfg)
	if err != nil {
		tb.Fatalf("instantiating the JS guest: %v", err)
	}
	tb.Cleanup(func() { in.mod.Close(context.Background()) })
	return in
}

// run writes stdin and calls run once.
func (in *instance) run(tb testing.TB, h *scriptedHost, stdin []byte) runResult {
	tb.Helper()
	in.stdin.Write(stdin)
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), hostKey{}, h), time.Minute)
	defer cancel()
	res, err := in.mod.ExportedFunction("run").Call(ctx)
	var exit *sys.ExitError
	if errors.As(err, &exit) { // the engine ends the instance at the deadline with proc_exit(2)
		return runResult{code: int32(exit.ExitCode()), stdout: in.stdout.String(), stderr: in.stderr.String(), host: h}
	}
	if err != nil {
		tb.Fatalf("run trapped: %v\nstderr:\n%s", err, in.stderr)
	}
	return runResult{code: api.DecodeI32(res[0]), stdout: in.stdout.String(), stderr: in.stderr.String(), host: h}
}

// runTool runs one tool on a fresh instance against h (nil: a default host).
func runTool(tb testing.TB, h *scriptedHost, ri runInput) runResult {
	tb.Helper()
	if h == nil {
		h = &scriptedHost{}
	}
	stdin, err := json.Marshal(ri)
	if err != nil {
		tb.Fatal(err)
	}
	return newInstance(tb).run(tb, h, stdin)
}

// envelope builds a response envelope.
func envelope(status int, headers map[string][]string, body string) string {
	if headers == nil {
		headers = map[string][]string{}
	}
	b, err := json.Marshal(map[string]any{"status": status, "headers": headers, "body": body})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (r runResult) String() string {
	return fmt.Sprintf("code %d\nstdout: %s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}
