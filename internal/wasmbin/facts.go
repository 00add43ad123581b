package wasmbin

import "math"

// Import is one import.
type Import struct {
	Module, Name string
	Kind         byte
	Limits       Limits // of an imported table or memory
}

// Imports reads an import section. It stops at the first import of an unknown kind.
func (s Section) Imports() ([]Import, error) {
	n, err := s.Count()
	if err != nil {
		return nil, err
	}
	out := make([]Import, 0, min(n, uint64(len(s.Body))/4)) // an import takes at least 4 bytes
	err = s.eachImport(func(module, name []byte, kind byte, l Limits) {
		out = append(out, Import{Module: string(module), Name: string(name), Kind: kind, Limits: l})
	})
	return out, err
}

// ImportCounts counts an import section's imports of each kind (KindFunc … KindGlobal), without
// allocating.
func (s Section) ImportCounts() (counts [4]uint64, err error) {
	err = s.eachImport(func(_, _ []byte, kind byte, _ Limits) { counts[kind]++ })
	return counts, err
}

// eachImport calls each with every import, as slices of the module.
func (s Section) eachImport(each func(module, name []byte, kind byte, l Limits)) error {
	r := s.Reader()
	n := r.ULEB()
	for i := uint64(0); i < n && r.err == nil; i++ {
		module, name, kind := r.Bytes(), r.Bytes(), r.Byte()
		var l Limits
		switch kind {
		case KindFunc:
			r.ULEB() // type index
		case KindTable:
			r.Byte() // reference type
			l = r.Limits()
		case KindMemory:
			l = r.Limits()
		case KindGlobal:
			r.Byte() // value type
			r.Byte() // mutability
		default:
			if r.err == nil {
				return malformed("import %d has kind 0x%02x", i, kind)
			}
		}
		if r.err == nil {
			each(module, name, kind, l)
		}
	}
	return r.err
}

// Export is one export.
type Export struct {
	Name  string
	Kind  byte
	Index uint64
}

// Exports reads an export section.
func (s Section) Exports() ([]Export, error) {
	r := s.Reader()
	n := r.ULEB()
	var out []Export
	for i := uint64(0); i < n && r.err == nil; i++ {
		e := Export{Name: string(r.Bytes()), Kind: r.Byte(), Index: r.ULEB()}
		if r.err == nil {
			out = append(out, e)
		}
	}
	return out, r.err
}

// Types calls each with every function type's parameter and result counts, in order, and stops
// at the first error it returns.
func (s Section) Types(each func(i, params, results uint64) error) error {
	r := s.Reader()
	n := r.ULEB()
	for i := uint64(0); i < n && r.err == nil; i++ {
		if form := r.Byte(); form != 0x60 && r.err == nil {
			return malformed("type %d is not a function type (0x%02x)", i, form)
		}
		params := uint64(len(r.Bytes()))
		results := uint64(len(r.Bytes()))
		if r.err != nil {
			break
		}
		if err := each(i, params, results); err != nil {
			return err
		}
	}
	return r.err
}

// Tables calls each with every table of a table section, in order, and stops at the first error
// it returns.
func (s Section) Tables(each func(i uint64, l Limits) error) error {
	r := s.Reader()
	n := r.ULEB()
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.Byte() // reference type
		l := r.Limits()
		if r.err != nil {
			break
		}
		if err := each(i, l); err != nil {
			return err
		}
	}
	return r.err
}

// Memories reads a memory section.
func (s Section) Memories() ([]Limits, error) {
	r := s.Reader()
	n := r.ULEB()
	var out []Limits
	for i := uint64(0); i < n && r.err == nil; i++ {
		if l := r.Limits(); r.err == nil {
			out = append(out, l)
		}
	}
	return out, r.err
}

// Bodies calls each with every function body of a code section: the locals it declares (at most
// math.MaxUint64; parameters excluded) and its instructions. It stops at the first error each
// returns.
func (s Section) Bodies(each func(i, locals uint64, code []byte) error) error {
	r := s.Reader()
	n := r.ULEB()
	for i := uint64(0); i < n && r.err == nil; i++ {
		size := r.ULEB()
		if r.err == nil && size > uint64(len(r.b)-r.at) {
			return malformed("function body %d runs past its section", i)
		}
		if r.err != nil {
			break
		}
		body := &Reader{b: r.b[:r.at+int(size)], at: r.at, base: r.base}
		var locals uint64
		for groups := body.ULEB(); groups > 0 && body.err == nil; groups-- {
			k := body.ULEB()
			body.Byte() // value type
			if locals > math.MaxUint64-k {
				locals = math.MaxUint64
			} else {
				locals += k
			}
		}
		if body.err != nil {
			return body.err
		}
		if err := each(i, locals, body.b[body.at:]); err != nil {
			return err
		}
		r.at += int(size)
	}
	return r.err
}

// DataSegment is an active data segment in memory 0 at an i32.const offset.
type DataSegment struct {
	Offset uint32
	Init   []byte // a slice of the module
}

// minSegmentBytes is the smallest active segment: mode, i32.const, offset, end, init length.
const minSegmentBytes = 5

// ActiveData reads a data section made only of active segments in memory 0 at i32.const offsets,
// in order. ok is false for any other data section.
func (s Section) ActiveData() (segments []DataSegment, ok bool) {
	r := s.Reader()
	count := r.ULEB()
	if r.err != nil || count > uint64(len(s.Body))/minSegmentBytes {
		return nil, false // more segments than the body can hold: nothing is made for them
	}
	segments = make([]DataSegment, 0, count)
	for range count {
		if r.Byte() != 0x00 || r.Byte() != 0x41 { // active, memory 0; i32.const
			return nil, false
		}
		off := r.SLEB()
		if r.Byte() != 0x0b || int64(int32(off)) != off { // end
			return nil, false
		}
		init := r.Bytes()
		if r.err != nil {
			return nil, false
		}
		segments = append(segments, DataSegment{Offset: uint32(off), Init: init})
	}
	return segments, r.at == len(r.b)
}

// MinPages is the minimum size, in pages, of the first memory the module defines (wazero's
// CompiledModule shows only exported and imported memories). ok is false when it defines none or
// the memory section cannot be read.
func (m *Module) MinPages() (pages uint64, ok bool) {
	s, found := m.Section(SectionMemory)
	if !found {
		return 0, false
	}
	mems, err := s.Memories()
	if len(mems) == 0 || err != nil {
		return 0, false
	}
	return mems[0].Min, true
}
