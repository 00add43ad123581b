package host

import (
	"cmp"
	"errors"
	"fmt"
	"math"

	"github.com/plimsoll/plimsoll/internal/wasmbin"
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

// DefaultModuleLimits are generous for real tools (a Go tool has about 2,500 functions, a Go
// program embedding a JavaScript interpreter about 12,600) and far below what hurts the host. Locals and parameters follow the limits browsers
// enforce (50,000 locals, 1,000 parameters).
func DefaultModuleLimits() ModuleLimits {
	return ModuleLimits{
		Bytes:         32 << 20,
		Functions:     100_000,
		LocalsPerFunc: 50_000, Locals: 2_000_000,
		ParamsPerType: 1_000,
		Globals:       100_000,
		Tables:        16, TableElements: 1_000_000,
		DataSegments: 100_000, ElementSegments: 100_000,
		Exports: 100_000, Imports: 1_000,
	}
}

// withDefaults is l with every zero field DefaultModuleLimits()'s.
func (l ModuleLimits) withDefaults() ModuleLimits {
	d := DefaultModuleLimits()
	return ModuleLimits{
		Bytes:           cmp.Or(l.Bytes, d.Bytes),
		Functions:       cmp.Or(l.Functions, d.Functions),
		LocalsPerFunc:   cmp.Or(l.LocalsPerFunc, d.LocalsPerFunc),
		Locals:          cmp.Or(l.Locals, d.Locals),
		ParamsPerType:   cmp.Or(l.ParamsPerType, d.ParamsPerType),
		Globals:         cmp.Or(l.Globals, d.Globals),
		Tables:          cmp.Or(l.Tables, d.Tables),
		TableElements:   cmp.Or(l.TableElements, d.TableElements),
		DataSegments:    cmp.Or(l.DataSegments, d.DataSegments),
		ElementSegments: cmp.Or(l.ElementSegments, d.ElementSegments),
		Exports:         cmp.Or(l.Exports, d.Exports),
		Imports:         cmp.Or(l.Imports, d.Imports),
	}
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
	mod           *wasmbin.Module
	tableElements uint64
	minPages      uint64
	growable      int // tables with no declared maximum
}

// checkModule reads bin's sections and refuses it when it goes over lim. It does not validate
// the module (wazero does, when compiling); it only judges the counts that cost host resources.
// A limit an earlier section goes over is reported before a later section that cannot be read.
func checkModule(bin []byte, lim ModuleLimits) (moduleShape, error) {
	var shape moduleShape
	if int64(len(bin)) > lim.Bytes {
		return shape, &ModuleError{Limit: "module.bytes", Reason: fmt.Sprintf("the module is %s, over module.bytes (%s)",
			profiles.FormatSize(int64(len(bin))), profiles.FormatSize(lim.Bytes))}
	}
	m, readErr := wasmbin.Read(bin)
	if m == nil {
		return shape, unreadable(readErr)
	}
	shape.mod = m
	var funcs, locals uint64
	for _, s := range m.Sections {
		var err error
		switch s.ID {
		case wasmbin.SectionType:
			err = checkTypes(s, lim)
		case wasmbin.SectionImport:
			err = checkImports(s, lim, &funcs)
		case wasmbin.SectionFunction:
			var n uint64
			n, err = s.Count()
			funcs = addCounts(funcs, n)
		case wasmbin.SectionTable:
			err = checkTables(s, lim, &shape)
		case wasmbin.SectionMemory:
			var mems []wasmbin.Limits
			if mems, err = s.Memories(); len(mems) > 0 {
				shape.minPages = mems[0].Min
			}
		case wasmbin.SectionGlobal:
			err = counted(s, "module.globals", "globals", lim.Globals)
		case wasmbin.SectionExport:
			err = counted(s, "module.exports", "exports", lim.Exports)
		case wasmbin.SectionElement:
			err = counted(s, "module.element_segments", "element segments", lim.ElementSegments)
		case wasmbin.SectionCode:
			err = checkCode(s, lim, &locals)
		case wasmbin.SectionData:
			err = counted(s, "module.data_segments", "data segments", lim.DataSegments)
		}
		if err != nil {
			return shape, unreadable(err)
		}
	}
	if readErr != nil {
		return shape, unreadable(readErr)
	}
	if err := limited(funcs, "module.functions", "functions", lim.Functions); err != nil {
		return shape, err
	}
	return shape, limited(locals, "module.locals", "locals in all functions", lim.Locals)
}

// unreadable is err as a *ModuleError: a limit as it is, a module wasmbin cannot read as
// malformed.
func unreadable(err error) error {
	var me *ModuleError
	if err == nil || errors.As(err, &me) {
		return err
	}
	return malformed("%v", err)
}

// addCounts adds two of a module's counts, stopping at the largest uint64: the module declares
// them, and a sum that wrapped around would pass a limit it is far over.
func addCounts(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

func limited(n uint64, limit, what string, max uint64) error {
	if n > max {
		return overLimit(limit, what, n, max)
	}
	return nil
}

// counted judges the element count of a vector section.
func counted(s wasmbin.Section, limit, what string, max uint64) error {
	n, err := s.Count()
	if err != nil {
		return err
	}
	return limited(n, limit, what, max)
}

func checkTypes(s wasmbin.Section, lim ModuleLimits) error {
	return s.Types(func(i, params, results uint64) error {
		if params+results > lim.ParamsPerType {
			return overLimit("module.params_per_type", fmt.Sprintf("type %d has parameters and results", i), params+results, lim.ParamsPerType)
		}
		return nil
	})
}

func checkImports(s wasmbin.Section, lim ModuleLimits, funcs *uint64) error {
	if err := counted(s, "module.imports", "imports", lim.Imports); err != nil {
		return err
	}
	counts, err := s.ImportCounts()
	*funcs = addCounts(*funcs, counts[wasmbin.KindFunc])
	return err
}

func checkTables(s wasmbin.Section, lim ModuleLimits, shape *moduleShape) error {
	if err := counted(s, "module.tables", "tables", lim.Tables); err != nil {
		return err
	}
	return s.Tables(func(i uint64, l wasmbin.Limits) error {
		if l.Flags > 1 {
			return malformed("table %d has limits flags 0x%02x", i, l.Flags)
		}
		size := l.Min
		if l.HasMax {
			size = l.Max
		} else {
			shape.growable++
		}
		shape.tableElements = addCounts(shape.tableElements, size)
		return limited(shape.tableElements, "module.table_elements", "table elements", lim.TableElements)
	})
}

// checkCode judges each function body's local declarations.
func checkCode(s wasmbin.Section, lim ModuleLimits, total *uint64) error {
	return s.Bodies(func(i, locals uint64, _ []byte) error {
		if locals > lim.LocalsPerFunc {
			return overLimit("module.locals_per_function", fmt.Sprintf("function body %d declares locals", i), locals, lim.LocalsPerFunc)
		}
		*total = addCounts(*total, locals)
		return limited(*total, "module.locals", "locals in all functions", lim.Locals)
	})
}

// boundTables returns the module with every growable table's maximum set to its minimum, so that
// table.grow fails in the guest instead of taking host memory. Go and clang never grow a table;
// the binary is returned as it is when nothing needs bounding.
func boundTables(bin []byte, shape moduleShape) []byte {
	if shape.growable == 0 || shape.mod == nil {
		return bin
	}
	return shape.mod.BoundTables()
}
