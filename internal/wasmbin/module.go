// Package wasmbin reads the WebAssembly binary format far enough to report the facts plimsoll
// judges before it compiles a module (sections, imports, exports, memories, tables, counts, data
// segments), and writes the few rewrites the host and the guest builds make. It does not validate
// a module: wazero does, when compiling. Judging the facts (limits, refusals) is the caller's.
//
// Read makes one pass over the section headers; everything else reads one section's body on
// demand. Nothing is copied: facts and sections are slices of the module.
package wasmbin

import (
	"errors"
	"fmt"
)

// Section ids.
const (
	SectionCustom    byte = 0
	SectionType      byte = 1
	SectionImport    byte = 2
	SectionFunction  byte = 3
	SectionTable     byte = 4
	SectionMemory    byte = 5
	SectionGlobal    byte = 6
	SectionExport    byte = 7
	SectionStart     byte = 8
	SectionElement   byte = 9
	SectionCode      byte = 10
	SectionData      byte = 11
	SectionDataCount byte = 12
)

// External kinds, of imports and exports.
const (
	KindFunc   byte = 0
	KindTable  byte = 1
	KindMemory byte = 2
	KindGlobal byte = 3
)

// ErrTruncated is a module that ends inside something it declares.
var ErrTruncated = errors.New("truncated")

// Error is a module that cannot be read; Offset is where, in the module.
type Error struct {
	Offset int
	Reason string
	Err    error // ErrTruncated, or nil
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v at byte %d", e.Err, e.Offset)
	}
	return e.Reason
}

func (e *Error) Unwrap() error { return e.Err }

func malformed(format string, args ...any) error {
	return &Error{Reason: fmt.Sprintf(format, args...)}
}

// Section is one section of a module.
type Section struct {
	ID     byte
	Start  int    // the offset of its id byte
	BodyAt int    // the offset of its body
	Body   []byte // a slice of the module
}

// End is the offset just past the section.
func (s Section) End() int { return s.BodyAt + len(s.Body) }

// Module is a module's sections, in order.
type Module struct {
	Bin      []byte
	Sections []Section
}

const header = "\x00asm"

// Read reads bin's section headers in one pass.
func Read(bin []byte) (*Module, error) {
	if len(bin) < 8 || string(bin[:4]) != header {
		return nil, malformed("not a WebAssembly binary")
	}
	m := &Module{Bin: bin, Sections: make([]Section, 0, 16)} // a module has at most 13 kinds
	for at := 8; at < len(bin); {
		id := bin[at]
		size, n := ULEB(bin[at+1:])
		if n == 0 {
			return m, &Error{Offset: at + 1, Err: ErrTruncated}
		}
		body := at + 1 + n
		if size > uint64(len(bin)-body) {
			return m, malformed("section %d runs past the end of the module", id)
		}
		m.Sections = append(m.Sections, Section{ID: id, Start: at, BodyAt: body, Body: bin[body : body+int(size)]})
		at = body + int(size)
	}
	return m, nil
}

// Section returns the first section with id.
func (m *Module) Section(id byte) (Section, bool) {
	if i := m.Index(id); i >= 0 {
		return m.Sections[i], true
	}
	return Section{}, false
}

// Index is the position in Sections of the first section with id, or -1.
func (m *Module) Index(id byte) int {
	for i, s := range m.Sections {
		if s.ID == id {
			return i
		}
	}
	return -1
}

// Count reads the element count at the start of a vector section (functions, globals, exports,
// element and data segments, …).
func (s Section) Count() (uint64, error) {
	r := s.Reader()
	n := r.ULEB()
	return n, r.Err()
}
