package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/plimsoll/plimsoll/internal/wasmbin"
)

// instrumentLoops gives a module its own cheap termination check, so the host can run it without
// wazero's close-on-context-done, which calls through a trampoline at every loop header (4–7×
// the run time of QuickJS's interpreter, whose dispatch loop goes round once per bytecode).
//
// It adds a mutable i32 global, the countdown, starting at interval, and inserts at the top of
// every loop body of every function but the exported tick function:
//
//	global.get $countdown; i32.const 1; i32.sub; global.set $countdown
//	global.get $countdown; i32.eqz
//	if; i32.const interval; global.set $countdown; call $tick; end
//
// Any code that runs forever goes round some loop forever (recursion ends at the stack limit), so
// it calls tick at least once every interval iterations; tick checks the run's deadline on the
// WASI clock and ends the run. The decoder knows the instructions clang emits for wasm32 with
// sign-ext, bulk memory, reference types and non-trapping float-to-int; anything else (SIMD,
// exceptions, tail calls) fails the build rather than being instrumented wrongly.
func instrumentLoops(bin []byte, tickExport string, interval int32) ([]byte, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:8], []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, errors.New("not a wasm module")
	}
	m, err := wasmbin.Read(bin)
	if err != nil {
		return nil, fmt.Errorf("malformed section header: %w", err)
	}
	var importedFuncs, importedGlobals uint64
	if s, ok := m.Section(wasmbin.SectionImport); ok {
		counts, err := s.ImportCounts()
		if err != nil {
			return nil, err
		}
		importedFuncs, importedGlobals = counts[wasmbin.KindFunc], counts[wasmbin.KindGlobal]
	}
	globalSec, codeSec := m.Index(wasmbin.SectionGlobal), m.Index(wasmbin.SectionCode)
	tick, err := findExport(m, tickExport)
	if err != nil {
		return nil, err
	}
	if globalSec < 0 || codeSec < 0 {
		return nil, fmt.Errorf("need a global section, a code section and an exported function %q", tickExport)
	}
	definedGlobals, err := m.Sections[globalSec].Count()
	if err != nil {
		return nil, err
	}
	countdown := importedGlobals + definedGlobals

	// The global section with the countdown appended.
	g := m.Sections[globalSec].Body
	_, n := wasmbin.ULEB(g)
	newGlobals := wasmbin.AppendULEB(nil, definedGlobals+1)
	newGlobals = append(newGlobals, g[n:]...)
	newGlobals = append(newGlobals, 0x7f, 0x01, 0x41)
	newGlobals = wasmbin.AppendSLEB(newGlobals, int64(interval))
	newGlobals = append(newGlobals, 0x0b)

	var snippet []byte
	snippet = append(snippet, 0x23)
	snippet = wasmbin.AppendULEB(snippet, countdown)
	snippet = append(snippet, 0x41, 0x01, 0x6b, 0x24)
	snippet = wasmbin.AppendULEB(snippet, countdown)
	snippet = append(snippet, 0x23)
	snippet = wasmbin.AppendULEB(snippet, countdown)
	snippet = append(snippet, 0x45, 0x04, 0x40, 0x41)
	snippet = wasmbin.AppendSLEB(snippet, int64(interval))
	snippet = append(snippet, 0x24)
	snippet = wasmbin.AppendULEB(snippet, countdown)
	snippet = append(snippet, 0x10)
	snippet = wasmbin.AppendULEB(snippet, tick)
	snippet = append(snippet, 0x0b)

	code := m.Sections[codeSec]
	count, err := code.Count()
	if err != nil {
		return nil, err
	}
	out := wasmbin.AppendULEB(nil, count)
	at := code.BodyAt + wasmbin.ULEBSize(count) // the first body's size
	for i := uint64(0); i < count; i++ {
		size, n := wasmbin.ULEB(bin[at:code.End()])
		if n == 0 || size > uint64(code.End()-at-n) {
			return nil, fmt.Errorf("function %d: malformed body", i)
		}
		body := bin[at+n : at+n+int(size)]
		at += n + int(size)
		if importedFuncs+i == tick {
			out = wasmbin.AppendULEB(out, size)
			out = append(out, body...)
			continue
		}
		nb, err := instrumentBody(body, snippet)
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", importedFuncs+i, err)
		}
		out = wasmbin.AppendULEB(out, uint64(len(nb)))
		out = append(out, nb...)
	}
	return m.Rewrite(wasmbin.Edit{Index: globalSec, Body: newGlobals}, wasmbin.Edit{Index: codeSec, Body: out}), nil
}

func instrumentBody(body, snippet []byte) ([]byte, error) {
	groups, p, err := takeU32(body, 0)
	if err != nil {
		return nil, errors.New("bad locals")
	}
	for range groups {
		if _, p, err = takeU32(body, p); err != nil || p >= len(body) {
			return nil, errors.New("bad locals")
		}
		p++ // the value type
	}
	out := append(make([]byte, 0, len(body)+len(body)/8), body[:p]...)
	for p < len(body) {
		start := p
		op := body[p]
		p++
		var err error
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			p, err = skipBlockType(body, p)
		case op == 0x0c || op == 0x0d || op == 0x10 || (op >= 0x20 && op <= 0x26) || op == 0xd2 || op == 0x3f || op == 0x40:
			p, err = skipLEB(body, p)
		case op == 0x0e: // br_table
			var c uint32
			c, p, err = takeU32(body, p)
			for i := uint32(0); err == nil && i <= c; i++ {
				p, err = skipLEB(body, p)
			}
		case op == 0x11: // call_indirect
			if p, err = skipLEB(body, p); err == nil {
				p, err = skipLEB(body, p)
			}
		case op == 0x1c: // select t*
			var c uint32
			c, p, err = takeU32(body, p)
			p += int(c)
		case op >= 0x28 && op <= 0x3e: // memarg
			if p, err = skipLEB(body, p); err == nil {
				p, err = skipLEB(body, p)
			}
		case op == 0x41 || op == 0x42:
			p, err = skipLEB(body, p)
		case op == 0x43:
			p += 4
		case op == 0x44:
			p += 8
		case op == 0xd0:
			p++
		case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x1a || op == 0x1b ||
			(op >= 0x45 && op <= 0xc4) || op == 0xd1:
		case op == 0xfc:
			var sub uint32
			sub, p, err = takeU32(body, p)
			switch {
			case err != nil:
			case sub <= 7:
			case sub == 8 || sub == 12 || sub == 14: // memory.init, table.init, table.copy
				if p, err = skipLEB(body, p); err == nil {
					p, err = skipLEB(body, p)
				}
			case sub == 9 || sub == 11 || sub == 13 || sub == 15 || sub == 16 || sub == 17:
				p, err = skipLEB(body, p)
			case sub == 10: // memory.copy
				if p, err = skipLEB(body, p); err == nil {
					p, err = skipLEB(body, p)
				}
			default:
				err = fmt.Errorf("unknown 0xfc instruction %d", sub)
			}
		default:
			err = fmt.Errorf("unknown opcode 0x%02x at %d", op, start)
		}
		if err != nil {
			return nil, err
		}
		if p > len(body) {
			return nil, errors.New("truncated instruction")
		}
		out = append(out, body[start:p]...)
		if op == 0x03 {
			out = append(out, snippet...)
		}
	}
	return out, nil
}

func skipBlockType(b []byte, p int) (int, error) {
	if p >= len(b) {
		return p, errors.New("truncated block type")
	}
	switch b[p] {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return p + 1, nil
	}
	return skipLEB(b, p) // a type index, s33
}

func skipLEB(b []byte, p int) (int, error) {
	_, n := wasmbin.ULEB(b[min(p, len(b)):])
	if n == 0 {
		return p, errors.New("bad LEB128")
	}
	return p + n, nil
}

func takeU32(b []byte, p int) (uint32, int, error) {
	v, n := wasmbin.ULEB(b[min(p, len(b)):])
	if n == 0 || v > math.MaxUint32 {
		return 0, p, errors.New("bad LEB128")
	}
	return uint32(v), p + n, nil
}

// findExport returns the index of the exported function name.
func findExport(m *wasmbin.Module, name string) (uint64, error) {
	s, ok := m.Section(wasmbin.SectionExport)
	if !ok {
		return 0, errors.New("no export section")
	}
	exports, err := s.Exports()
	if err != nil {
		return 0, errors.New("bad export")
	}
	for _, e := range exports {
		if e.Kind == wasmbin.KindFunc && e.Name == name {
			return e.Index, nil
		}
	}
	return 0, fmt.Errorf("no exported function %q", name)
}
