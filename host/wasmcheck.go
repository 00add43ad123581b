package host

import (
	"errors"
	"fmt"

	"github.com/plimsoll/plimsoll/profiles"
)

// ModuleLimits bound what a .wasm tool may declare. wazero allocates host memory for what a
// module declares (locals while compiling, table elements and globals when instantiating) and
// spends compile time per function, none of which limits.memory or the run timeout would
// otherwise see: a 50-byte module declaring 2^26 locals drove the host to 1.6 GiB. So a tool's
// structure is read and checked before it is compiled.
type ModuleLimits struct {
	Bytes            int64  // the module's size
	Functions        uint64 // imported and defined
	LocalsPerFunc    uint64 // locals one function declares (parameters excluded)
	Locals           uint64 // locals all functions declare together
	ParamsPerType    uint64 // parameters plus results of one function type
	Globals          uint64
	Tables           uint64
	TableElements    uint64 // over all tables; each costs 8 bytes of host memory, counted in limits.memory too
	DataSegments     uint64
	ElementSegments  uint64
	Exports, Imports uint64
}

// DefaultModuleLimits are generous for real tools (a Go tool has about 2,500 functions, goja
// 12,600) and far below what hurts the host. Locals and parameters follow the limits browsers
// enforce (50,000 locals, 1,000 parameters).
var DefaultModuleLimits = ModuleLimits{
	Bytes:         32 << 20,
	Functions:     100_000,
	LocalsPerFunc: 50_000, Locals: 2_000_000,
	ParamsPerType: 1_000,
	Globals:       100_000,
	Tables:        16, TableElements: 1_000_000,
	DataSegments: 100_000, ElementSegments: 100_000,
	Exports: 100_000, Imports: 1_000,
}

// tableElementBytes is the host memory one table element takes in wazero (a pointer).
const tableElementBytes = 8

// ModuleError is a .wasm tool refused before compiling: over one of ModuleLimits or
// limits.memory (Limit names which; it matches ErrLimit), or one whose sections cannot be read
// (Limit is ""; it matches ErrSetup).
type ModuleError struct {
	Limit  string // "module.functions", "limits.memory", …; "" when the module is malformed
	Reason string
}

func (e *ModuleError) Error() string { return "the module is refused: " + e.Reason }
func (e *ModuleError) Is(target error) bool {
	if e.Limit == "" {
		return target == ErrSetup
	}
	return target == ErrLimit
}

// isMalformed reports whether err is checkModule failing to read the module, as opposed to a
// limit it found.
func isMalformed(err error) bool {
	var me *ModuleError
	return errors.As(err, &me) && me.Limit == ""
}

func overLimit(limit, what string, got, max uint64) error {
	return &ModuleError{Limit: limit, Reason: fmt.Sprintf("%s %d, over %s (%d)", what, got, limit, max)}
}

func malformed(format string, args ...any) error {
	return &ModuleError{Reason: "malformed: " + fmt.Sprintf(format, args...)}
}

// moduleShape is what checkModule learned about a module.
type moduleShape struct {
	tableElements uint64
	minPages      uint64
	growable      []growableTable // tables with no declared maximum, in the table section
}

// growableTable is a table without a maximum: table.grow could grow it without bound, so the
// host makes its minimum its maximum (see boundTables).
type growableTable struct{ limitsAt, limitsEnd int } // offsets of its limits in the binary

// checkModule reads bin's sections and refuses it when it goes over lim. It does not validate
// the module (wazero does, when compiling); it only reads the counts that cost host resources.
func checkModule(bin []byte, lim ModuleLimits) (moduleShape, error) {
	var shape moduleShape
	if int64(len(bin)) > lim.Bytes {
		return shape, &ModuleError{Limit: "module.bytes", Reason: fmt.Sprintf("the module is %s, over module.bytes (%s)",
			profiles.FormatSize(int64(len(bin))), profiles.FormatSize(lim.Bytes))}
	}
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return shape, malformed("not a WebAssembly binary")
	}
	var funcs, locals uint64
	r := &wasmReader{b: bin, at: 8}
	for !r.done() {
		id := r.byte()
		size := r.uleb()
		start := r.at
		if r.err == nil && size > uint64(len(bin)-start) {
			return shape, malformed("section %d runs past the end of the module", id)
		}
		end := start + int(size)
		body := &wasmReader{b: bin[:end], at: start}
		var err error
		switch id {
		case 1:
			err = checkTypes(body, lim)
		case 2:
			var imported uint64
			imported, err = checkImports(body, lim)
			funcs += imported
		case 3:
			funcs += body.uleb()
		case 4:
			err = checkTables(body, lim, &shape)
		case 5:
			if body.uleb() > 0 {
				body.byte()
				shape.minPages = body.uleb()
			}
		case 6:
			err = counted(body.uleb(), "module.globals", "globals", lim.Globals)
		case 7:
			err = counted(body.uleb(), "module.exports", "exports", lim.Exports)
		case 9:
			err = counted(body.uleb(), "module.element_segments", "element segments", lim.ElementSegments)
		case 10:
			locals, err = checkCode(body, lim)
		case 11:
			err = counted(body.uleb(), "module.data_segments", "data segments", lim.DataSegments)
		}
		if err == nil {
			err = body.err
		}
		if err != nil {
			return shape, err
		}
		r.at = end
	}
	if r.err != nil {
		return shape, r.err
	}
	if err := counted(funcs, "module.functions", "functions", lim.Functions); err != nil {
		return shape, err
	}
	return shape, counted(locals, "module.locals", "locals in all functions", lim.Locals)
}

func counted(n uint64, limit, what string, max uint64) error {
	if n > max {
		return overLimit(limit, what, n, max)
	}
	return nil
}

func checkTypes(r *wasmReader, lim ModuleLimits) error {
	n := r.uleb()
	for i := uint64(0); i < n && r.err == nil; i++ {
		if form := r.byte(); form != 0x60 {
			return malformed("type %d is not a function type (0x%02x)", i, form)
		}
		params := r.skipVec()
		results := r.skipVec()
		if params+results > lim.ParamsPerType {
			return overLimit("module.params_per_type", fmt.Sprintf("type %d has parameters and results", i), params+results, lim.ParamsPerType)
		}
	}
	return nil
}

func checkImports(r *wasmReader, lim ModuleLimits) (funcs uint64, err error) {
	n := r.uleb()
	if err := counted(n, "module.imports", "imports", lim.Imports); err != nil {
		return 0, err
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.skipVec() // module
		r.skipVec() // name
		switch kind := r.byte(); kind {
		case 0:
			r.uleb()
			funcs++
		case 1:
			r.byte()
			r.limits()
		case 2:
			r.limits()
		case 3:
			r.byte()
			r.byte()
		default:
			return 0, malformed("import %d has kind 0x%02x", i, kind)
		}
	}
	return funcs, nil
}

func checkTables(r *wasmReader, lim ModuleLimits, shape *moduleShape) error {
	n := r.uleb()
	if err := counted(n, "module.tables", "tables", lim.Tables); err != nil {
		return err
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.byte() // reference type
		at := r.at
		flags, min, max, hasMax := r.limits()
		if flags > 1 {
			return malformed("table %d has limits flags 0x%02x", i, flags)
		}
		size := min
		if hasMax {
			size = max
		} else {
			shape.growable = append(shape.growable, growableTable{limitsAt: at, limitsEnd: r.at})
		}
		shape.tableElements += size
		if shape.tableElements > lim.TableElements {
			return overLimit("module.table_elements", "table elements", shape.tableElements, lim.TableElements)
		}
	}
	return nil
}

// checkCode reads each function body's local declarations and skips its instructions.
func checkCode(r *wasmReader, lim ModuleLimits) (total uint64, err error) {
	n := r.uleb()
	for i := uint64(0); i < n && r.err == nil; i++ {
		size := r.uleb()
		end := r.at + int(size)
		if r.err != nil || size > uint64(len(r.b)-r.at) {
			return total, malformed("function body %d runs past its section", i)
		}
		var locals uint64
		for groups := r.uleb(); groups > 0 && r.err == nil; groups-- {
			locals += r.uleb()
			r.byte()
			if locals > lim.LocalsPerFunc {
				return total, overLimit("module.locals_per_function", fmt.Sprintf("function body %d declares locals", i), locals, lim.LocalsPerFunc)
			}
		}
		total += locals
		if total > lim.Locals {
			return total, overLimit("module.locals", "locals in all functions", total, lim.Locals)
		}
		r.at = end
	}
	return total, nil
}

// boundTables returns bin with every growable table's maximum set to its minimum, so that
// table.grow fails in the guest instead of taking host memory. Go and clang never grow a table;
// the binary is returned as it is when nothing needs bounding.
func boundTables(bin []byte, shape moduleShape) []byte {
	if len(shape.growable) == 0 {
		return bin
	}
	// The table section grows by the bytes of each added maximum, so its size is re-encoded.
	var out []byte
	r := &wasmReader{b: bin, at: 8}
	out = append(out, bin[:8]...)
	for !r.done() {
		sectionAt := r.at
		id := r.byte()
		size := r.uleb()
		start, end := r.at, r.at+int(size)
		r.at = end
		if id != 4 {
			out = append(out, bin[sectionAt:end]...)
			continue
		}
		var body []byte
		prev := start
		for _, t := range shape.growable {
			if t.limitsAt < start || t.limitsEnd > end {
				continue // in another table section; wazero refuses such a module
			}
			lr := &wasmReader{b: bin, at: t.limitsAt + 1} // past the flags byte
			min := lr.uleb()
			body = append(body, bin[prev:t.limitsAt]...)
			body = append(body, 1)
			body = appendULEB(body, min)
			body = appendULEB(body, min)
			prev = t.limitsEnd
		}
		body = append(body, bin[prev:end]...)
		out = append(out, id)
		out = appendULEB(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out
}

// wasmReader reads the binary format's primitives; the first error sticks.
type wasmReader struct {
	b   []byte
	at  int
	err error
}

var errTruncated = errors.New("truncated")

func (r *wasmReader) done() bool { return r.err != nil || r.at >= len(r.b) }

func (r *wasmReader) byte() byte {
	if r.err != nil || r.at >= len(r.b) {
		r.fail()
		return 0
	}
	c := r.b[r.at]
	r.at++
	return c
}

func (r *wasmReader) uleb() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := uleb128(r.b[r.at:])
	if n == 0 {
		r.fail()
		return 0
	}
	r.at += n
	return v
}

// skipVec skips a vector of bytes (a name, or value types) and returns its length.
func (r *wasmReader) skipVec() uint64 {
	n := r.uleb()
	if r.err == nil && n > uint64(len(r.b)-r.at) {
		r.fail()
		return 0
	}
	r.at += int(n)
	return n
}

func (r *wasmReader) limits() (flags byte, min, max uint64, hasMax bool) {
	flags = r.byte()
	min = r.uleb()
	if flags&1 == 1 {
		max, hasMax = r.uleb(), true
	}
	return flags, min, max, hasMax
}

func (r *wasmReader) fail() {
	if r.err == nil {
		r.err = malformed("%v at byte %d", errTruncated, r.at)
	}
}
