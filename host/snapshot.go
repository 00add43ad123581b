package host

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/plimsoll/plimsoll/profiles"
)

// The JavaScript runtime's _initialize (Go's package initialisation, goja.New, the generic
// preamble) costs about 50 ms of guest CPU, and its result is the same for every instance: it
// reads no input, makes no host call, and draws no randomness that a tool can see (Math.random
// and crypto/rand read WASI random_get when they are used; the runtime's buffer starts empty).
// So the host runs _initialize once, in a template instance, and keeps the result: the whole
// memory image and the values of the mutable globals. The module the host compiles for runs has
// no data section (the image holds that data), so instantiating it writes nothing into memory.
// A new instance gets its own memory, reserved up to its own limit as before, with the image
// mapped copy-on-write at its start where the platform allows (a sealed memfd on Linux): pages
// the run only reads are shared with the image, and a page is copied when the run first writes
// it. Elsewhere the image is copied in.
//
// What instances share is the state of the Go runtime inside the guest right after its
// initialisation, including the seed of its internal (non-cryptographic) random generator,
// which picks map hash seeds and scheduling order. Nothing flows from one run into another: the
// template never runs a tool, and no run can write to the image.

// globalExportPrefix names the exports added for the module's globals, which wazero can only
// read and write when they are exported.
const globalExportPrefix = "plimsoll.snapshot.global."

// snapshot is the state of an instance after _initialize.
type snapshot struct {
	size    uint64   // the memory size in bytes
	image   []byte   // the memory, when it is not in file
	file    *image   // the memory, to map copy-on-write; nil when the platform cannot
	globals []global // the mutable globals
}

type global struct {
	name  string
	value uint64
}

// prepareJS returns the module the host compiles for JS runs: bin without its data section and
// with every global it defines exported as globalExportPrefix + its index, made in one copy.
// It also returns the data segments, in order, as slices of bin, and the names of the added
// exports. ok is false when bin cannot be read this way (no export or data section, a data count
// section, a segment that is not active in memory 0 at an i32.const offset, a malformed section):
// the host then compiles bin as it is and every instance runs _initialize.
func prepareJS(bin []byte) (mod []byte, data []dataSegment, globals []string, ok bool) {
	if len(bin) < 8 {
		return nil, nil, nil, false
	}
	type section struct{ start, end int } // id and size included
	var imported, defined uint64
	export, dataSec := section{-1, -1}, section{-1, -1}
	var exportBody []byte
	rest, pos := bin[8:], 8
	for len(rest) > 0 {
		id := rest[0]
		size, n := uleb128(rest[1:])
		if n == 0 || size > uint64(len(rest)-1-n) {
			return nil, nil, nil, false
		}
		body := rest[1+n : 1+n+int(size)]
		end := pos + 1 + n + int(size)
		switch id {
		case 2: // imports: count the imported globals, which come first in the index space
			if imported, ok = importedGlobals(body); !ok {
				return nil, nil, nil, false
			}
		case 6:
			count, m := uleb128(body)
			if m == 0 {
				return nil, nil, nil, false
			}
			defined = count
		case 7:
			export, exportBody = section{pos, end}, body
		case 11:
			if data, ok = dataSegments(body); !ok {
				return nil, nil, nil, false
			}
			dataSec = section{pos, end}
		case 12: // data count: bulk-memory instructions may name segments
			return nil, nil, nil, false
		}
		rest = rest[1+n+int(size):]
		pos = end
	}
	if export.start < 0 || dataSec.start < 0 || defined == 0 || defined > 1<<16 {
		return nil, nil, nil, false
	}
	count, m := uleb128(exportBody)
	if m == 0 {
		return nil, nil, nil, false
	}
	body := appendULEB(nil, count+defined)
	body = append(body, exportBody[m:]...)
	globals = make([]string, 0, defined)
	for i := range defined {
		name := globalExportPrefix + strconv.FormatUint(imported+i, 10)
		globals = append(globals, name)
		body = appendULEB(body, uint64(len(name)))
		body = append(body, name...)
		body = append(body, 0x03) // a global
		body = appendULEB(body, imported+i)
	}
	mod = make([]byte, 0, len(bin)-(dataSec.end-dataSec.start)-(export.end-export.start)+len(body)+16)
	for _, part := range []struct {
		from, to int
		replace  bool
	}{
		// export comes before data in a valid module
		{0, export.start, false}, {export.start, export.end, true}, {export.end, dataSec.start, false},
		{dataSec.end, len(bin), false},
	} {
		if !part.replace {
			mod = append(mod, bin[part.from:part.to]...)
			continue
		}
		mod = append(mod, 7)
		mod = appendULEB(mod, uint64(len(body)))
		mod = append(mod, body...)
	}
	return mod, data, globals, true
}

// dataSegments reads a data section body made only of active segments in memory 0 at i32.const
// offsets. The segments are returned in order, as slices of body.
func dataSegments(body []byte) ([]dataSegment, bool) {
	count, n := uleb128(body)
	if n == 0 || count > uint64(len(body)) {
		return nil, false
	}
	body = body[n:]
	segments := make([]dataSegment, 0, count)
	for range count {
		if len(body) < 2 || body[0] != 0x00 || body[1] != 0x41 {
			return nil, false
		}
		off, n := sleb128(body[2:])
		if n == 0 || len(body) < 2+n+1 || body[2+n] != 0x0b || int64(int32(off)) != off {
			return nil, false
		}
		body = body[2+n+1:]
		size, m := uleb128(body)
		if m == 0 || size > uint64(len(body)-m) {
			return nil, false
		}
		segments = append(segments, dataSegment{offset: uint32(off), init: body[m : m+int(size)]})
		body = body[m+int(size):]
	}
	return segments, len(body) == 0
}

// importedGlobals counts the globals in an import section body.
func importedGlobals(body []byte) (uint64, bool) {
	count, n := uleb128(body)
	if n == 0 {
		return 0, false
	}
	body = body[n:]
	var globals uint64
	skipName := func() bool {
		l, n := uleb128(body)
		if n == 0 || l > uint64(len(body)-n) {
			return false
		}
		body = body[n+int(l):]
		return true
	}
	skipLimits := func() bool {
		if len(body) < 1 {
			return false
		}
		flags := body[0]
		body = body[1:]
		for range 1 + int(flags&1) {
			_, n := uleb128(body)
			if n == 0 {
				return false
			}
			body = body[n:]
		}
		return true
	}
	for range count {
		if !skipName() || !skipName() || len(body) < 1 {
			return 0, false
		}
		kind := body[0]
		body = body[1:]
		switch kind {
		case 0: // function: a type index
			_, n := uleb128(body)
			if n == 0 {
				return 0, false
			}
			body = body[n:]
		case 1: // table: a reference type, then limits
			if len(body) < 1 {
				return 0, false
			}
			body = body[1:]
			if !skipLimits() {
				return 0, false
			}
		case 2: // memory
			if !skipLimits() {
				return 0, false
			}
		case 3: // global: a value type and mutability
			if len(body) < 2 {
				return 0, false
			}
			body = body[2:]
			globals++
		default:
			return 0, false
		}
	}
	return globals, true
}

// takeSnapshot instantiates compiled (a module prepareJS made), writes the data segments into its
// memory in order, as instantiation would, runs _initialize and keeps the result. globals names
// the exports prepareJS added.
func takeSnapshot(ctx context.Context, r wazero.Runtime, compiled wazero.CompiledModule, data []dataSegment, globals []string) (*snapshot, error) {
	inst, err := instantiate(ctx, r, compiled, profiles.MaxMemory, nil)
	if err != nil {
		return nil, err
	}
	defer inst.close(context.Background())
	mem := inst.mod.Memory()
	if mem == nil {
		return nil, errors.New("the module has no memory")
	}
	for _, d := range data {
		if !mem.Write(d.offset, d.init) {
			return nil, errors.New("a data segment lies outside the module's memory")
		}
	}
	if err := inst.initialize(ctx); err != nil {
		return nil, err
	}
	after, _ := mem.Read(0, mem.Size())
	s := &snapshot{size: uint64(len(after))}
	for _, name := range globals {
		if g, ok := inst.mod.ExportedGlobal(name).(api.MutableGlobal); ok {
			s.globals = append(s.globals, global{name: name, value: g.Get()})
		}
	}
	if s.file, err = newImage(after); err != nil {
		s.image = bytes.Clone(after)
	}
	return s, nil
}

// close releases the image file. Instances that map it keep their mapping.
func (s *snapshot) close() {
	if s != nil && s.file != nil {
		s.file.close()
	}
}

// restore brings a freshly instantiated instance to the snapshot's state. It fails when the
// memory cannot grow to the snapshot's size (the instance's memory limit).
func (s *snapshot) restore(inst *instance) error {
	mem := inst.mod.Memory()
	if size := uint64(mem.Size()); size < s.size {
		if _, ok := mem.Grow(uint32((s.size - size) / wasmPage)); !ok {
			return memoryLimit(inst.mem.limit)
		}
	}
	if !inst.mem.imaged {
		buf, _ := mem.Read(0, uint32(s.size))
		if s.image != nil {
			copy(buf, s.image)
		} else if err := s.file.copyTo(buf); err != nil {
			return err
		}
	}
	for _, g := range s.globals {
		mg, ok := inst.mod.ExportedGlobal(g.name).(api.MutableGlobal)
		if !ok {
			return errors.New("host: restoring the JS runtime's globals failed")
		}
		mg.Set(g.value)
	}
	inst.initialized = true
	return nil
}
