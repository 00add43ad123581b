package main

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/plimsoll/plimsoll/internal/wasmbin"
)

// loopModule is a module with an exported tick function (which counts its calls in global 0)
// and spin(n), a loop of n iterations with a nested block, a br_table and a memory access inside.
func loopModule() []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	sec := func(id byte, body []byte) {
		m = append(m, id)
		m = wasmbin.AppendULEB(m, uint64(len(body)))
		m = append(m, body...)
	}
	sec(1, []byte{2, 0x60, 0, 0, 0x60, 1, 0x7f, 0}) // types: () -> (), (i32) -> ()
	sec(3, []byte{2, 0, 1})                         // funcs: tick, spin
	sec(5, []byte{1, 0, 1})                         // memory: min 1 page
	sec(6, []byte{1, 0x7f, 1, 0x41, 0, 0x0b})       // global 0: mut i32 = 0 (tick calls)
	exports := []byte{3}
	for _, e := range []struct {
		name      string
		kind, idx byte
	}{{"tick", 0, 0}, {"spin", 0, 1}, {"calls", 3, 0}} {
		exports = append(exports, byte(len(e.name)))
		exports = append(exports, e.name...)
		exports = append(exports, e.kind, e.idx)
	}
	sec(7, exports)
	tick := []byte{0, 0x23, 0, 0x41, 1, 0x6a, 0x24, 0, 0x0b} // calls++
	spin := []byte{1, 1, 0x7f,                               // one local i32 (the counter)
		0x02, 0x40, // block
		0x03, 0x40, // loop
		0x20, 1, 0x20, 0, 0x4e, 0x0d, 1, // if i >= n: br 1 (out)
		0x02, 0x40, 0x20, 1, 0x41, 1, 0x71, 0x0e, 1, 0, 0, 0x0b, // block; br_table on i&1
		0x41, 0, 0x20, 1, 0x36, 2, 0, // i32.store [0] = i
		0x20, 1, 0x41, 1, 0x6a, 0x21, 1, // i++
		0x0c, 0, // br 0 (loop)
		0x0b, 0x0b, 0x0b}
	code := []byte{2}
	for _, f := range [][]byte{tick, spin} {
		code = wasmbin.AppendULEB(code, uint64(len(f)))
		code = append(code, f...)
	}
	sec(10, code)
	return m
}

func TestInstrumentLoops(t *testing.T) {
	bin := loopModule()
	out, err := instrumentLoops(bin, "tick", 100)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	for _, tc := range []struct {
		bin  []byte
		want uint64
	}{{bin, 0}, {out, 10}} {
		mod, err := r.Instantiate(ctx, tc.bin)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mod.ExportedFunction("spin").Call(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		if got := calls(t, mod); got != tc.want {
			t.Errorf("tick called %d times for 1000 iterations, want %d", got, tc.want)
		}
		mod.Close(ctx)
	}
	again, err := instrumentLoops(bin, "tick", 100)
	if err != nil || string(again) != string(out) {
		t.Fatal("instrumenting is not deterministic")
	}
	if _, err := instrumentLoops(append(bin[:len(bin):len(bin)], 0), "tick", 100); err == nil {
		t.Error("a malformed module was instrumented")
	}
}

// calls reads the exported count of tick calls.
func calls(t *testing.T, mod api.Module) uint64 {
	t.Helper()
	g := mod.ExportedGlobal("calls")
	if g == nil {
		t.Fatal("no calls global")
	}
	return g.Get()
}
