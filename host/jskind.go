package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"

	"github.com/plimsoll/plimsoll/abi"
	jsguest "github.com/plimsoll/plimsoll/guests/js"
	"github.com/plimsoll/plimsoll/profiles"
)

// jsKind runs JavaScript tools on the embedded engine. The engine is compiled once, its state
// after _initialize is snapshotted (snapshot.go), and with Options.PoolSize a pool keeps
// instances ready.
type jsKind struct {
	rt    *Runtime
	guest func() (*guest, error) // compiled once, on first use
	snap  *snapshot              // the engine's, once compiled; guarded by guest's once
	dir   string                 // where the decompressed engine is kept; "" for nowhere
	pool  *pool                  // nil when Options.PoolSize is 0
}

func newJSKind(rt *Runtime) *jsKind {
	k := &jsKind{rt: rt, dir: rt.dir}
	k.guest = sync.OnceValues(k.compileEngine)
	if rt.opts.PoolSize > 0 {
		k.pool = rt.startPool(rt.opts.PoolSize, k.prepared)
	}
	return k
}

// compileEngine compiles the engine, from the decompressed copy when there is a good one.
func (k *jsKind) compileEngine() (*guest, error) {
	bin, fromCopy := jsModule(k.dir)
	g, err := k.compileSnapshot(bin)
	if err != nil && fromCopy { // a damaged copy: start again from the embedded bytes
		os.Remove(jsCopyPath(k.dir))
		g, err = k.compileSnapshot(jsguest.Wasm())
	}
	if err == nil {
		k.snap = g.snap // for release
	}
	return g, err
}

// compileSnapshot compiles the engine and takes its snapshot (see snapshot.go). When the
// snapshot cannot be taken, it compiles the module as it is, and every instance runs
// _initialize, which then reports any error.
func (k *jsKind) compileSnapshot(bin []byte) (*guest, error) {
	ctx := context.Background()
	if mod, data, globals, ok := prepareJS(bin); ok {
		g, err := k.rt.compile(ctx, mod)
		if err == nil {
			if g.snap, err = takeSnapshot(ctx, k.rt.r, g.mod, data, globals); err == nil {
				return g, nil
			}
			g.mod.Close(ctx)
		}
	}
	return k.rt.compile(ctx, coalesceData(bin))
}

// prepared is a new engine instance, initialised, for the pool.
func (k *jsKind) prepared(ctx context.Context) (*instance, error) {
	g, err := k.guest()
	if err != nil {
		return nil, err
	}
	inst, err := k.rt.newInstance(ctx, g, profiles.MaxMemory)
	if err != nil {
		return nil, err
	}
	if err := inst.initialize(ctx); err != nil {
		inst.close(context.Background())
		return nil, err
	}
	return inst, nil
}

// load compiles the engine on first use (not bounded by one run's deadline: every run shares
// it) and builds the engine's stdin from the tool, its input and the profile's preamble.
func (k *jsKind) load(_ context.Context, tool Tool, p *profiles.Profile, _ profiles.Limits, input []byte) (*guest, []byte, error) {
	preamble, err := p.ReadPreamble()
	if err != nil {
		return nil, nil, setupError("read the preamble", err)
	}
	stdin, err := jsStdin(tool, input, preamble)
	if err != nil {
		return nil, nil, setupError("read the input", err)
	}
	g, err := k.guest()
	return g, stdin, err
}

func (k *jsKind) pooled(memLimit uint64) *instance {
	if k.pool == nil {
		return nil
	}
	return k.pool.take(memLimit)
}

// resultError reads the engine's result: abi.ExitLimited is a limit the engine enforced, named
// on the last line it logged.
func (k *jsKind) resultError(ret int32, log []byte) error {
	if ret == abi.ExitLimited {
		return guestLimit(log)
	}
	return &ToolError{ExitCode: int(ret), Message: logReason(log, false)}
}

func (k *jsKind) stop(ctx context.Context) {
	if k.pool != nil {
		k.pool.stop(ctx)
	}
}

func (k *jsKind) release() { k.snap.close() }

// guestLimit reports a limit the JS engine enforced, from the line it logs last:
// "plimsoll: limit: call stack depth 1500 exceeded".
func guestLimit(log []byte) error {
	const prefix = "plimsoll: limit: "
	msg := "a guest-side limit was reached"
	if i := bytes.LastIndex(log, []byte(prefix)); i >= 0 {
		line, _, _ := strings.Cut(string(log[i+len(prefix):]), "\n")
		msg = strings.TrimSpace(line)
	}
	return &LimitError{Limit: "guest", Message: "guest limit: " + msg}
}

// jsRequest is the JS engine's stdin (see guests/js/runtime).
type jsRequest struct {
	Tool     string          `json:"tool"`
	Input    json.RawMessage `json:"input"`
	Preamble string          `json:"preamble"`
	Name     string          `json:"name"`
}

var errInputNotJSON = errors.New("the input is not valid JSON")

// jsStdin builds the JS engine's stdin. Empty input is null.
func jsStdin(t Tool, input []byte, preamble string) ([]byte, error) {
	in := json.RawMessage("null")
	if len(bytes.TrimSpace(input)) > 0 {
		if !json.Valid(input) {
			return nil, errInputNotJSON
		}
		in = input
	}
	return json.Marshal(jsRequest{Tool: t.js, Input: in, Preamble: preamble, Name: t.Name})
}
