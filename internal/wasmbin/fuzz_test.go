package wasmbin

import (
	"bytes"
	"testing"
)

// FuzzRead: reading never panics, whatever the bytes; the sections it reads tile the module; a
// rewrite without edits is the module; every fact reader stays inside its section; bounding the
// tables leaves none growable and a readable module; coalescing data is idempotent.
func FuzzRead(f *testing.F) {
	f.Add(module(section(SectionType, 1, 0x60, 0, 0), section(SectionFunction, 1, 0), section(SectionCode, 1, 2, 0, 0x0b)))
	f.Add(module(section(SectionTable, 2, 0x70, 0, 10, 0x70, 1, 5, 7)))
	f.Add(module(section(SectionImport, 1, 1, 'm', 1, 'g', KindGlobal, 0x7f, 0), section(SectionData, 2, 0, 0x41, 8, 0x0b, 1, 'a', 0, 0x41, 10, 0x0b, 1, 'b')))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x01\x10\x01"))
	f.Fuzz(func(t *testing.T, bin []byte) {
		m, err := Read(bin)
		if err != nil {
			return
		}
		at := 8
		for _, s := range m.Sections {
			if s.Start != at || s.End() > len(bin) {
				t.Fatalf("section %d at %d..%d, want it to start at %d", s.ID, s.Start, s.End(), at)
			}
			at = s.End()
			nop := func(...any) error { return nil }
			_ = s.Types(func(i, p, r uint64) error { return nop(i, p, r) })
			imports, ierr := s.Imports()
			counts, cerr := s.ImportCounts()
			if (ierr == nil) != (cerr == nil) || uint64(len(imports)) != counts[0]+counts[1]+counts[2]+counts[3] {
				t.Fatalf("Imports (%d, %v) and ImportCounts (%v, %v) disagree", len(imports), ierr, counts, cerr)
			}
			_, _ = s.Exports()
			_, _ = s.Memories()
			_, _ = s.ActiveData()
			_ = s.Tables(func(_ uint64, l Limits) error {
				if l.At < s.BodyAt || l.End > s.End() {
					t.Fatalf("limits at %d..%d outside their section %d..%d", l.At, l.End, s.BodyAt, s.End())
				}
				return nil
			})
			_ = s.Bodies(func(_, _ uint64, code []byte) error { return nop(code) })
		}
		if !bytes.Equal(m.Rewrite(), bin) {
			t.Fatal("a rewrite without edits changed the module")
		}
		bounded, err := Read(m.BoundTables())
		if err != nil {
			t.Fatalf("the bounded module cannot be read: %v", err)
		}
		for _, s := range bounded.Sections {
			if s.ID != SectionTable {
				continue
			}
			_ = s.Tables(func(i uint64, l Limits) error {
				if !l.HasMax {
					t.Fatalf("table %d is still growable", i)
				}
				return nil
			})
		}
		merged := m.CoalesceData()
		again, err := Read(merged)
		if err != nil {
			t.Fatalf("the coalesced module cannot be read: %v", err)
		}
		if !bytes.Equal(again.CoalesceData(), merged) {
			t.Fatal("coalescing twice changed the module")
		}
	})
}
