package wasmbin

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"testing"
)

// module is a wasm binary with the given sections, written without this package's writers.
func module(sections ...[]byte) []byte {
	bin := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		bin = append(bin, s...)
	}
	return bin
}

// section is a section whose body is shorter than 128 bytes (a one-byte size).
func section(id byte, body ...byte) []byte {
	return append([]byte{id, byte(len(body))}, body...)
}

func TestLEB(t *testing.T) {
	for _, v := range []uint64{0, 1, 63, 64, 127, 128, 16383, 16384, math.MaxUint32, math.MaxUint64} {
		b := AppendULEB(nil, v)
		got, n := ULEB(b)
		if got != v || n != len(b) || n != ULEBSize(v) {
			t.Errorf("ULEB %d: % x decodes to %d (%d bytes), size %d", v, b, got, n, ULEBSize(v))
		}
	}
	for _, v := range []int64{0, 1, -1, 63, 64, -64, -65, 1 << 40, math.MinInt32, math.MaxInt64, math.MinInt64} {
		b := AppendSLEB(nil, v)
		got, n := SLEB(b)
		if got != v || n != len(b) || n != SLEBSize(v) {
			t.Errorf("SLEB %d: % x decodes to %d (%d bytes)", v, b, got, n)
		}
	}
	if _, n := ULEB([]byte{0x80, 0x80}); n != 0 {
		t.Error("an unterminated ULEB decodes")
	}
	if _, n := ULEB(bytes.Repeat([]byte{0x80}, 11)); n != 0 {
		t.Error("an 11-byte ULEB decodes")
	}
	if v, n := SLEB([]byte{0x7f}); v != -1 || n != 1 {
		t.Errorf("SLEB 0x7f = %d, %d; want -1, 1", v, n)
	}
}

func TestReadSections(t *testing.T) {
	bin := module(section(SectionType, 1, 0x60, 0, 0), section(SectionFunction, 1, 0), section(SectionCustom, 1, 'n'))
	m, err := Read(bin)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Sections) != 3 {
		t.Fatalf("%d sections, want 3", len(m.Sections))
	}
	fn, ok := m.Section(SectionFunction)
	if !ok || fn.Start != 14 || fn.BodyAt != 16 || fn.End() != 18 || !bytes.Equal(fn.Body, []byte{1, 0}) {
		t.Errorf("function section %+v", fn)
	}
	if n, err := fn.Count(); n != 1 || err != nil {
		t.Errorf("function count %d, %v", n, err)
	}
	if m.Index(SectionCode) != -1 {
		t.Error("a code section was found in a module without one")
	}
}

func TestReadRefusesWhatItCannotRead(t *testing.T) {
	for name, tc := range map[string]struct {
		bin       []byte
		want      string
		truncated bool
	}{
		"empty":                    {nil, "not a WebAssembly binary", false},
		"not wasm":                 {[]byte("MZ\x90\x00\x00\x00\x00\x00"), "not a WebAssembly binary", false},
		"a section past the end":   {module([]byte{1, 0x10, 1}), "section 1 runs past the end of the module", false},
		"an unterminated size":     {module([]byte{1, 0x80}), "truncated at byte 9", true},
		"the last of two sections": {module(section(3, 0), []byte{10, 5}), "section 10 runs past the end of the module", false},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read(tc.bin)
			var we *Error
			if !errors.As(err, &we) || err.Error() != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if errors.Is(err, ErrTruncated) != tc.truncated {
				t.Errorf("errors.Is(err, ErrTruncated) = %v", !tc.truncated)
			}
		})
	}
}

func TestFacts(t *testing.T) {
	bin := module(
		section(SectionType, 2, 0x60, 2, 0x7f, 0x7f, 1, 0x7f, 0x60, 0, 0),
		section(SectionImport, 3,
			1, 'm', 1, 'f', KindFunc, 0,
			1, 'm', 1, 'g', KindGlobal, 0x7f, 0,
			1, 'm', 3, 'm', 'e', 'm', KindMemory, 0, 2),
		section(SectionTable, 2, 0x70, 0, 10, 0x70, 1, 5, 7),
		section(SectionMemory, 1, 1, 3, 9),
		section(SectionExport, 1, 3, 'r', 'u', 'n', KindFunc, 1),
		section(SectionCode, 2, 2, 0, 0x0b, 6, 2, 3, 0x7f, 4, 0x7e, 0x0b),
		section(SectionData, 2, 0, 0x41, 8, 0x0b, 1, 'a', 0, 0x41, 0x7f, 0x0b, 2, 'b', 'c'),
	)
	m, err := Read(bin)
	if err != nil {
		t.Fatal(err)
	}
	get := func(id byte) Section { s, _ := m.Section(id); return s }

	var arities [][2]uint64
	if err := get(SectionType).Types(func(_, p, r uint64) error { arities = append(arities, [2]uint64{p, r}); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(arities) != 2 || arities[0] != [2]uint64{2, 1} || arities[1] != [2]uint64{0, 0} {
		t.Errorf("types %v", arities)
	}

	imports, err := get(SectionImport).Imports()
	if err != nil || len(imports) != 3 || imports[1] != (Import{Module: "m", Name: "g", Kind: KindGlobal}) ||
		imports[2].Name != "mem" || imports[2].Limits.Min != 2 {
		t.Errorf("imports %+v, %v", imports, err)
	}

	if counts, err := get(SectionImport).ImportCounts(); err != nil || counts != [4]uint64{KindFunc: 1, KindMemory: 1, KindGlobal: 1} {
		t.Errorf("import counts %v, %v", counts, err)
	}

	var tables []Limits
	_ = get(SectionTable).Tables(func(_ uint64, l Limits) error { tables = append(tables, l); return nil })
	if len(tables) != 2 || tables[0].HasMax || tables[0].Min != 10 || !tables[1].HasMax || tables[1].Max != 7 ||
		bin[tables[0].At] != 0 || tables[0].End-tables[0].At != 2 {
		t.Errorf("tables %+v", tables)
	}

	if pages, ok := m.MinPages(); !ok || pages != 3 {
		t.Errorf("min pages %d, %v", pages, ok)
	}

	exports, err := get(SectionExport).Exports()
	if err != nil || len(exports) != 1 || exports[0] != (Export{Name: "run", Kind: KindFunc, Index: 1}) {
		t.Errorf("exports %+v, %v", exports, err)
	}

	var locals []uint64
	_ = get(SectionCode).Bodies(func(_, n uint64, code []byte) error {
		locals = append(locals, n)
		if code[len(code)-1] != 0x0b {
			t.Errorf("code % x does not end with end", code)
		}
		return nil
	})
	if len(locals) != 2 || locals[0] != 0 || locals[1] != 7 {
		t.Errorf("locals %v", locals)
	}

	data, ok := get(SectionData).ActiveData()
	if !ok || len(data) != 2 || data[0].Offset != 8 || string(data[1].Init) != "bc" || int32(data[1].Offset) != -1 {
		t.Errorf("data %+v, %v", data, ok)
	}
}

func TestFactsStopAtTheCallersError(t *testing.T) {
	m, _ := Read(module(section(SectionType, 2, 0x60, 0, 0, 0x60, 0, 0)))
	stop := errors.New("stop")
	calls := 0
	err := m.Sections[0].Types(func(uint64, uint64, uint64) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("err %v after %d calls", err, calls)
	}
}

func TestBodiesStayInsideTheirSize(t *testing.T) {
	// The body declares 2 bytes; its local group runs on into the next byte.
	m, _ := Read(module(section(SectionCode, 1, 2, 1, 5, 0x7f, 0x0b)))
	if err := m.Sections[0].Bodies(func(uint64, uint64, []byte) error { return nil }); !errors.Is(err, ErrTruncated) {
		t.Errorf("got %v, want a truncated body", err)
	}
}

func TestActiveDataRefusesOtherSegments(t *testing.T) {
	for name, body := range map[string][]byte{
		"passive":          {1, 1, 1, 'a'},
		"memory 1":         {1, 2, 1, 0x41, 0, 0x0b, 1, 'a'},
		"an i64 offset":    {1, 0, 0x42, 0, 0x0b, 1, 'a'},
		"bytes left over":  {1, 0, 0x41, 0, 0x0b, 1, 'a', 0},
		"a truncated init": {1, 0, 0x41, 0, 0x0b, 5, 'a'},
	} {
		m, _ := Read(module(section(SectionData, body...)))
		if _, ok := m.Sections[0].ActiveData(); ok {
			t.Errorf("%s: read as active data", name)
		}
	}
}

func TestRewrite(t *testing.T) {
	a, b, c := section(SectionType, 0), section(SectionFunction, 1, 0), section(SectionExport, 0)
	m, _ := Read(module(a, b, c))
	if got := m.Rewrite(); !bytes.Equal(got, m.Bin) {
		t.Error("no edits changed the module")
	}
	long := bytes.Repeat([]byte{'x'}, 200) // a two-byte size
	got := m.Rewrite(Edit{Index: 0, Drop: true}, Edit{Index: 2, Body: long})
	want := module(b, append([]byte{SectionExport, 0xc8, 0x01}, long...))
	if !bytes.Equal(got, want) {
		t.Errorf("got % x\nwant % x", got, want)
	}
}

func TestBoundTables(t *testing.T) {
	m, _ := Read(module(section(SectionTable, 2, 0x70, 0, 10, 0x70, 1, 5, 7)))
	want := module(section(SectionTable, 2, 0x70, 1, 10, 10, 0x70, 1, 5, 7))
	if got := m.BoundTables(); !bytes.Equal(got, want) {
		t.Errorf("got % x\nwant % x", got, want)
	}
	bounded, _ := Read(want)
	if got := bounded.BoundTables(); &got[0] != &want[0] {
		t.Error("a module with nothing to bound was copied")
	}
}

func TestExportGlobals(t *testing.T) {
	m, _ := Read(module(section(SectionExport, 1, 1, 'r', KindFunc, 0)))
	body, names, err := ExportGlobals(m.Sections[0], "g.", 1, 2)
	if err != nil || len(names) != 2 || names[0] != "g.1" || names[1] != "g.2" {
		t.Fatalf("names %v, %v", names, err)
	}
	got, _ := Read(module(append([]byte{SectionExport, byte(len(body))}, body...)))
	exports, err := got.Sections[0].Exports()
	want := []Export{{"r", KindFunc, 0}, {"g.1", KindGlobal, 1}, {"g.2", KindGlobal, 2}}
	if err != nil || len(exports) != 3 || exports[0] != want[0] || exports[1] != want[1] || exports[2] != want[2] {
		t.Errorf("exports %+v, %v", exports, err)
	}
}

func TestCoalesceData(t *testing.T) {
	// Out of order with a small gap: one segment, the gap written as zeros.
	m, _ := Read(module(section(SectionData, 2, 0, 0x41, 0x0b, 0x0b, 1, 'b', 0, 0x41, 8, 0x0b, 1, 'a')))
	want := module(section(SectionData, 1, 0, 0x41, 8, 0x0b, 4, 'a', 0, 0, 'b'))
	if got := m.CoalesceData(); !bytes.Equal(got, want) {
		t.Errorf("got % x\nwant % x", got, want)
	}
	// Far apart: left alone, as is a module with a data count section.
	for _, bin := range [][]byte{
		module(section(SectionData, 2, 0, 0x41, 0, 0x0b, 1, 'a', 0, 0x41, 0x80, 0x40, 0x0b, 1, 'b')),
		module(section(SectionDataCount, 2), section(SectionData, 2, 0, 0x41, 0, 0x0b, 1, 'a', 0, 0x41, 1, 0x0b, 1, 'b')),
	} {
		m, _ := Read(bin)
		if got := m.CoalesceData(); !bytes.Equal(got, bin) {
			t.Errorf("% x was rewritten to % x", bin, got)
		}
	}
}

// A data section whose count cannot fit its body (a segment takes at least 5 bytes) is refused
// before anything is made for it: the count is the module's word, not a size to allocate.
func TestActiveDataCountMustFitTheBody(t *testing.T) {
	body := AppendULEB(nil, 1<<16)
	body = append(body, make([]byte, 1<<16)...)
	bin := module(append(append([]byte{SectionData}, AppendULEB(nil, uint64(len(body)))...), body...))
	m, err := Read(bin)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, ok := m.Sections[0].ActiveData()
	runtime.ReadMemStats(&after)
	if ok {
		t.Fatal("read as active data")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("%d bytes allocated for a section of %d bytes", n, len(body))
	}
}
