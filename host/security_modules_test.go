package host

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plimsoll/plimsoll/broker"
	"github.com/plimsoll/plimsoll/guests/testguest"
	"github.com/plimsoll/plimsoll/internal/wasmbin"
)

// Class 2 of the security suite: a .wasm tool whose structure would cost the host memory or
// compile time that limits.memory and the run timeout do not see. Each is refused before it is
// compiled, names the limit, writes one audit line, and sends nothing upstream.

// wasmModule assembles a module from sections (id, body).
func wasmModule(sections ...[]byte) []byte {
	bin := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		bin = append(bin, s...)
	}
	return bin
}

func section(id byte, body []byte) []byte {
	return append(wasmbin.AppendULEB([]byte{id}, uint64(len(body))), body...)
}

func vec(n uint64, items ...[]byte) []byte {
	b := wasmbin.AppendULEB(nil, n)
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

var (
	typeVoid     = section(1, vec(1, []byte{0x60, 0, 0})) // () -> ()
	exportStart0 = section(7, vec(1, []byte{6, '_', 's', 't', 'a', 'r', 't', 0, 0}))
)

// funcs declares n functions of type 0.
func funcs(n int) []byte {
	body := wasmbin.AppendULEB(nil, uint64(n))
	for range n {
		body = append(body, 0)
	}
	return section(3, body)
}

// bodies gives n functions a body each declaring locals i32 locals (in one group) and doing nothing.
func bodies(n int, locals uint64) []byte {
	fn := []byte{1}
	fn = wasmbin.AppendULEB(fn, locals)
	fn = append(fn, 0x7f, 0x0b) // i32, end
	if locals == 0 {
		fn = []byte{0, 0x0b}
	}
	one := wasmbin.AppendULEB(nil, uint64(len(fn)))
	one = append(one, fn...)
	body := wasmbin.AppendULEB(nil, uint64(n))
	for range n {
		body = append(body, one...)
	}
	return section(10, body)
}

func table(min uint64, max ...uint64) []byte {
	lim := []byte{0x70, 0}
	if len(max) > 0 {
		lim[1] = 1
	}
	lim = wasmbin.AppendULEB(lim, min)
	for _, m := range max {
		lim = wasmbin.AppendULEB(lim, m)
	}
	return section(4, vec(1, lim))
}

func globals(n int) []byte {
	body := wasmbin.AppendULEB(nil, uint64(n))
	for range n {
		body = append(body, 0x7f, 0, 0x41, 0, 0x0b) // immutable i32 = 0
	}
	return section(6, body)
}

func TestHostileModulesAreRefusedBeforeCompiling(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "limits:\n  memory: 16MiB\n  run_timeout: 2s\n")
	lim := DefaultModuleLimits()
	tests := []struct {
		name  string
		bin   []byte
		limit string
	}{
		{"2^26 locals in one function (50 bytes)", wasmModule(typeVoid, funcs(1), bodies(1, 1<<26)), "module.locals_per_function"},
		{"locals just over the per-function limit", wasmModule(typeVoid, funcs(1), bodies(1, lim.LocalsPerFunc+1)), "module.locals_per_function"},
		{"locals summed over many functions", wasmModule(typeVoid, funcs(50), bodies(50, lim.LocalsPerFunc)), "module.locals"},
		{"locals in two groups of one function", wasmModule(typeVoid, funcs(1), section(10, vec(1, append([]byte{10, 2}, append(wasmbin.AppendULEB(wasmbin.AppendULEB(nil, 40_000), 0x7f), append(wasmbin.AppendULEB(nil, 40_000), 0x7f, 0x0b)...)...)))), "module.locals_per_function"},
		{"a 2^27-element table (63 bytes)", wasmModule(typeVoid, table(1<<27)), "module.table_elements"},
		{"a table whose maximum is huge", wasmModule(typeVoid, table(1, 1<<27)), "module.table_elements"},
		{"a table that fits the count but not limits.memory beside the memory", wasmModule(typeVoid, table(lim.TableElements), section(5, vec(1, []byte{0, 0xc8, 0x01}))), "limits.memory"}, // 200 pages + 8 MiB of table
		{"more functions than the limit", wasmModule(typeVoid, funcs(int(lim.Functions)+1)), "module.functions"},
		{"more globals than the limit", wasmModule(typeVoid, globals(int(lim.Globals)+1)), "module.globals"},
		{"a function type with 2,000 parameters", wasmModule(section(1, vec(1, append(append([]byte{0x60}, append(wasmbin.AppendULEB(nil, 2000), make([]byte, 2000)...)...), 0)))), "module.params_per_type"},
		{"a module over the size cap", wasmModule(section(0, append([]byte{1, 'x'}, make([]byte, lim.Bytes)...))), "module.bytes"},
		{"too many data segments", wasmModule(section(11, wasmbin.AppendULEB(nil, lim.DataSegments+1))), "module.data_segments"},
		{"too many element segments", wasmModule(section(9, wasmbin.AppendULEB(nil, lim.ElementSegments+1))), "module.element_segments"},
		{"too many tables", wasmModule(section(4, wasmbin.AppendULEB(nil, lim.Tables+1))), "module.tables"},
		{"too many exports", wasmModule(section(7, wasmbin.AppendULEB(nil, lim.Exports+1))), "module.exports"},
		{"too many imports", wasmModule(section(2, wasmbin.AppendULEB(nil, lim.Imports+1))), "module.imports"},
		{"memory larger than limits.memory", wasmModule(section(5, vec(1, []byte{0, 0x80, 0x04}))), "limits.memory"}, // 512 pages = 32 MiB
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := ps.requests.Load()
			res := shared(t).Run(context.Background(), WasmTool("hostile.wasm", tc.bin), p, nil)

			require.Error(t, res.Err)
			require.ErrorIs(t, res.Err, ErrLimit)
			assert.Contains(t, res.Err.Error(), tc.limit, "the refusal names the limit")
			var me *ModuleError
			var le *LimitError
			switch {
			case errors.As(res.Err, &me):
				assert.Equal(t, tc.limit, me.Limit)
			case errors.As(res.Err, &le):
				assert.Equal(t, tc.limit, le.Limit)
			default:
				t.Fatalf("want a *ModuleError or *LimitError, got %T", res.Err)
			}
			assert.Equal(t, broker.StatusLimit, res.Audit.Status)
			assert.Equal(t, res.Err.Error(), res.Audit.Error)
			assert.Zero(t, res.Audit.HostCalls)
			assert.Equal(t, before, ps.requests.Load(), "nothing reached the upstream")
		})
	}
}

// The checks are not a validator: modules just under each limit compile and run.
func TestModulesUnderTheLimitsRun(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "limits:\n  memory: 16MiB\n")
	startBody := section(10, vec(1, []byte{4, 1, 0x10, 0x7f, 0x0b})) // _start: 16 i32 locals
	tests := map[string][]byte{
		"locals":                wasmModule(typeVoid, funcs(1), exportStart0, startBody),
		"a bounded table":       wasmModule(typeVoid, funcs(1), table(1000, 1000), exportStart0, startBody),
		"a growable table":      wasmModule(typeVoid, funcs(1), table(1000), exportStart0, startBody),
		"many globals":          wasmModule(typeVoid, funcs(1), globals(1000), exportStart0, startBody),
		"the Go test guest too": testguest.Wasm(),
	}
	for name, bin := range tests {
		t.Run(name, func(t *testing.T) {
			input := []byte(nil)
			if name == "the Go test guest too" {
				input = guestCmd(map[string]any{"op": "state"})
			}
			res := shared(t).Run(context.Background(), WasmTool("ok.wasm", bin), p, input)
			require.NoError(t, res.Err)
			assert.Equal(t, broker.StatusOK, res.Audit.Status)
		})
	}
}

// A table without a maximum gets its minimum as maximum, so table.grow fails in the guest
// instead of taking host memory.
func TestGrowableTablesAreBounded(t *testing.T) {
	bin := wasmModule(typeVoid, table(10), table(5, 7))
	// Two tables need two table sections' worth of entries in one section; build it directly.
	bin = wasmModule(typeVoid, section(4, vec(2, []byte{0x70, 0, 10}, []byte{0x70, 1, 5, 7})))
	shape, err := checkModule(bin, DefaultModuleLimits())
	require.NoError(t, err)
	assert.Equal(t, uint64(17), shape.tableElements, "the maximum counts where one is declared")
	bounded := boundTables(bin, shape)
	assert.Equal(t, wasmModule(typeVoid, section(4, vec(2, []byte{0x70, 1, 10, 10}, []byte{0x70, 1, 5, 7}))), bounded)
	again, err := checkModule(bounded, DefaultModuleLimits())
	require.NoError(t, err)
	assert.Zero(t, again.growable)
	assert.Equal(t, bin, boundTables(bin, moduleShape{}), "nothing to bound: the same bytes")
}

// Counts summed over a module's entries cannot wrap around past their limit: a second table
// declaring a maximum near 2^64 is over module.table_elements, not a small total.
func TestModuleSumsDoNotWrap(t *testing.T) {
	huge := wasmbin.AppendULEB(nil, math.MaxUint64-5)
	bin := wasmModule(typeVoid, section(4, vec(2, []byte{0x70, 1, 0, 10}, append([]byte{0x70, 1, 0}, huge...))))
	_, err := checkModule(bin, DefaultModuleLimits())
	var me *ModuleError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, "module.table_elements", me.Limit)

	fn := wasmModule(typeVoid, section(2, vec(1, []byte{3, 'e', 'n', 'v', 1, 'f', 0, 0})), section(3, wasmbin.AppendULEB(nil, math.MaxUint64)))
	_, err = checkModule(fn, DefaultModuleLimits())
	require.ErrorAs(t, err, &me)
	assert.Equal(t, "module.functions", me.Limit)
}

// A module the reader cannot read is reported by wazero, which says precisely what is wrong.
func TestMalformedModulesAreReportedByTheCompiler(t *testing.T) {
	ps := newPetstore(t)
	p := profile(t, ps.URL, "")
	for name, bin := range map[string][]byte{
		"truncated section": []byte("\x00asm\x01\x00\x00\x00\x01\x10\x01"),
		"not wasm":          []byte("MZ\x90\x00"),
		"empty":             nil,
	} {
		t.Run(name, func(t *testing.T) {
			res := shared(t).Run(context.Background(), WasmTool("bad.wasm", bin), p, nil)
			require.ErrorIs(t, res.Err, ErrSetup)
			assert.NotErrorIs(t, res.Err, ErrLimit)
			assert.Equal(t, broker.StatusError, res.Audit.Status)
		})
	}
}

// Options.ModuleLimits caps the module size in the library API.
func TestModuleLimitsOption(t *testing.T) {
	ps := newPetstore(t)
	rt := newRuntime(t, Options{ModuleLimits: ModuleLimits{Bytes: 1 << 20}})
	res := rt.Run(context.Background(), goGuest(), profile(t, ps.URL, ""), guestCmd(map[string]any{"op": "state"}))
	require.ErrorIs(t, res.Err, ErrLimit)
	assert.Contains(t, res.Err.Error(), "over module.bytes (1MiB)")
}

// A zero field of Options.ModuleLimits is the default's; a set one replaces it.
func TestModuleLimitsDefaults(t *testing.T) {
	d := DefaultModuleLimits()
	got := ModuleLimits{Functions: 10}.withDefaults()
	assert.Equal(t, uint64(10), got.Functions)
	got.Functions = d.Functions
	assert.Equal(t, d, got, "every other field is the default")
	assert.Equal(t, d, ModuleLimits{}.withDefaults())
}
