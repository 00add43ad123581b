package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
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
	type section struct {
		id   byte
		body []byte
	}
	var sections []section
	for rest := bin[8:]; len(rest) > 0; {
		id := rest[0]
		size, n := readU32(rest[1:])
		if n == 0 || int(size) > len(rest)-1-n {
			return nil, errors.New("malformed section header")
		}
		sections = append(sections, section{id, rest[1+n : 1+n+int(size)]})
		rest = rest[1+n+int(size):]
	}

	var importedFuncs, importedGlobals, definedGlobals uint32
	tick := int64(-1)
	globalSec, codeSec := -1, -1
	for i, s := range sections {
		switch s.id {
		case 2:
			f, g, err := countImports(s.body)
			if err != nil {
				return nil, err
			}
			importedFuncs, importedGlobals = f, g
		case 6:
			globalSec = i
			c, _ := readU32(s.body)
			definedGlobals = c
		case 7:
			idx, err := findExport(s.body, tickExport)
			if err != nil {
				return nil, err
			}
			tick = idx
		case 10:
			codeSec = i
		}
	}
	if tick < 0 || globalSec < 0 || codeSec < 0 {
		return nil, fmt.Errorf("need a global section, a code section and an exported function %q", tickExport)
	}
	countdown := importedGlobals + definedGlobals

	// The global section with the countdown appended.
	g := sections[globalSec].body
	_, n := readU32(g)
	var newGlobals []byte
	newGlobals = appendU32(newGlobals, definedGlobals+1)
	newGlobals = append(newGlobals, g[n:]...)
	newGlobals = append(newGlobals, 0x7f, 0x01, 0x41)
	newGlobals = appendS64(newGlobals, int64(interval))
	newGlobals = append(newGlobals, 0x0b)
	sections[globalSec].body = newGlobals

	var snippet []byte
	snippet = append(snippet, 0x23)
	snippet = appendU32(snippet, countdown)
	snippet = append(snippet, 0x41, 0x01, 0x6b, 0x24)
	snippet = appendU32(snippet, countdown)
	snippet = append(snippet, 0x23)
	snippet = appendU32(snippet, countdown)
	snippet = append(snippet, 0x45, 0x04, 0x40, 0x41)
	snippet = appendS64(snippet, int64(interval))
	snippet = append(snippet, 0x24)
	snippet = appendU32(snippet, countdown)
	snippet = append(snippet, 0x10)
	snippet = appendU32(snippet, uint32(tick))
	snippet = append(snippet, 0x0b)

	code := sections[codeSec].body
	count, n := readU32(code)
	code = code[n:]
	out := appendU32(nil, count)
	for i := uint32(0); i < count; i++ {
		size, n := readU32(code)
		if n == 0 || int(size) > len(code)-n {
			return nil, fmt.Errorf("function %d: malformed body", i)
		}
		body := code[n : n+int(size)]
		code = code[n+int(size):]
		if int64(importedFuncs+i) == tick {
			out = appendU32(out, size)
			out = append(out, body...)
			continue
		}
		nb, err := instrumentBody(body, snippet)
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", importedFuncs+i, err)
		}
		out = appendU32(out, uint32(len(nb)))
		out = append(out, nb...)
	}
	sections[codeSec].body = out

	res := append([]byte{}, bin[:8]...)
	for _, s := range sections {
		res = append(res, s.id)
		res = appendU32(res, uint32(len(s.body)))
		res = append(res, s.body...)
	}
	return res, nil
}

func instrumentBody(body, snippet []byte) ([]byte, error) {
	p := 0
	groups, n := readU32(body)
	if n == 0 {
		return nil, errors.New("bad locals")
	}
	p += n
	for range groups {
		_, n := readU32(body[p:])
		if n == 0 || p+n >= len(body) {
			return nil, errors.New("bad locals")
		}
		p += n + 1
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
	for i := 0; p < len(b) && i < 10; i++ {
		c := b[p]
		p++
		if c&0x80 == 0 {
			return p, nil
		}
	}
	return p, errors.New("bad LEB128")
}

func takeU32(b []byte, p int) (uint32, int, error) {
	v, n := readU32(b[min(p, len(b)):])
	if n == 0 {
		return 0, p, errors.New("bad LEB128")
	}
	return v, p + n, nil
}

func readU32(b []byte) (uint32, int) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > math.MaxUint32 {
		return 0, 0
	}
	return uint32(v), n
}

func appendU32(b []byte, v uint32) []byte { return binary.AppendUvarint(b, uint64(v)) }

func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func readName(b []byte) (string, []byte, error) {
	l, n := readU32(b)
	if n == 0 || int(l) > len(b)-n {
		return "", nil, errors.New("bad name")
	}
	return string(b[n : n+int(l)]), b[n+int(l):], nil
}

// countImports returns how many functions and globals a module imports.
func countImports(b []byte) (funcs, globals uint32, err error) {
	c, n := readU32(b)
	b = b[n:]
	for range c {
		if _, b, err = readName(b); err != nil {
			return
		}
		if _, b, err = readName(b); err != nil {
			return
		}
		if len(b) == 0 {
			return 0, 0, errors.New("bad import")
		}
		kind := b[0]
		b = b[1:]
		switch kind {
		case 0: // func: type index
			funcs++
			_, n = readU32(b)
			b = b[n:]
		case 1: // table: reftype, limits
			b = b[1:]
			b, err = skipLimits(b)
		case 2: // memory: limits
			b, err = skipLimits(b)
		case 3: // global: valtype, mut
			globals++
			b = b[2:]
		default:
			return 0, 0, fmt.Errorf("unknown import kind %d", kind)
		}
		if err != nil {
			return
		}
	}
	return funcs, globals, nil
}

func skipLimits(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, errors.New("bad limits")
	}
	flags := b[0]
	b = b[1:]
	_, n := readU32(b)
	b = b[n:]
	if flags&1 != 0 {
		_, n = readU32(b)
		b = b[n:]
	}
	return b, nil
}

// findExport returns the index of the exported function name.
func findExport(b []byte, name string) (int64, error) {
	c, n := readU32(b)
	b = b[n:]
	for range c {
		var nm string
		var err error
		if nm, b, err = readName(b); err != nil || len(b) == 0 {
			return -1, errors.New("bad export")
		}
		kind := b[0]
		idx, n := readU32(b[1:])
		b = b[1+n:]
		if kind == 0 && nm == name {
			return int64(idx), nil
		}
	}
	return -1, fmt.Errorf("no exported function %q", name)
}
