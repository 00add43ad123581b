package host

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The JavaScript runtime's _initialize (Go's package initialisation, goja.New, the generic
// preamble) costs about 50 ms of guest CPU, and its result is the same for every instance: it
// reads no input, makes no host call, and draws no randomness that a tool can see (Math.random
// and crypto/rand read WASI random_get when they are used; the runtime's buffer starts empty).
// So the host runs _initialize once, in a template instance, and records what it changed: the
// memory pages that differ from a freshly instantiated module, and the values of the mutable
// globals. A new instance is then instantiated as before (its own memory, its own limit) and has
// those pages and globals written into it instead of running _initialize, in about a tenth of
// the time.
//
// What instances share is the state of the Go runtime inside the guest right after its
// initialisation, including the seed of its internal (non-cryptographic) random generator,
// which picks map hash seeds and scheduling order. Nothing flows from one run into another: the
// template never runs a tool.

// globalExportPrefix names the exports added for the module's globals, which wazero can only
// read and write when they are exported.
const globalExportPrefix = "plimsoll.snapshot.global."

// snapshot is the state of an instance after _initialize, as a difference from a freshly
// instantiated one.
type snapshot struct {
	size    uint32   // the memory size in bytes
	pages   []dirty  // the pages that differ, in order
	globals []global // the mutable globals
}

type dirty struct {
	offset uint32
	data   []byte
}

type global struct {
	name  string
	value uint64
}

const snapshotPage = 4096

// exportGlobals returns bin with every global it defines exported as globalExportPrefix + its
// index, and the names of those exports. It returns bin and no names when the module cannot be
// read this way (no export section, or a malformed section): the host then runs _initialize.
func exportGlobals(bin []byte) ([]byte, []string) {
	if len(bin) < 8 {
		return bin, nil
	}
	var imported, defined uint64
	exportStart, exportEnd := -1, -1
	var exportBody []byte
	rest, pos := bin[8:], 8
	for len(rest) > 0 {
		id := rest[0]
		size, n := uleb128(rest[1:])
		if n == 0 || size > uint64(len(rest)-1-n) {
			return bin, nil
		}
		body := rest[1+n : 1+n+int(size)]
		switch id {
		case 2: // imports: count the imported globals, which come first in the index space
			var ok bool
			if imported, ok = importedGlobals(body); !ok {
				return bin, nil
			}
		case 6:
			count, m := uleb128(body)
			if m == 0 {
				return bin, nil
			}
			defined = count
		case 7:
			exportStart, exportEnd, exportBody = pos, pos+1+n+int(size), body
		}
		rest = rest[1+n+int(size):]
		pos += 1 + n + int(size)
	}
	if exportStart < 0 || defined == 0 || defined > 1<<16 {
		return bin, nil
	}
	count, m := uleb128(exportBody)
	if m == 0 {
		return bin, nil
	}
	body := appendULEB(nil, count+defined)
	body = append(body, exportBody[m:]...)
	names := make([]string, 0, defined)
	for i := range defined {
		name := globalExportPrefix + strconv.FormatUint(imported+i, 10)
		names = append(names, name)
		body = appendULEB(body, uint64(len(name)))
		body = append(body, name...)
		body = append(body, 0x03) // a global
		body = appendULEB(body, imported+i)
	}
	out := make([]byte, 0, len(bin)+len(body)-len(exportBody)+8)
	out = append(out, bin[:exportStart]...)
	out = append(out, 7)
	out = appendULEB(out, uint64(len(body)))
	out = append(out, body...)
	return append(out, bin[exportEnd:]...), names
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

// takeSnapshot instantiates compiled, runs _initialize and records what it changed. globals names
// the exports exportGlobals added.
func takeSnapshot(ctx context.Context, r wazero.Runtime, compiled wazero.CompiledModule, memLimit uint64, globals []string) (*snapshot, error) {
	inst, err := instantiate(ctx, r, compiled, memLimit)
	if err != nil {
		return nil, err
	}
	defer inst.close(context.Background())
	mem := inst.mod.Memory()
	if mem == nil {
		return nil, errors.New("the module has no memory")
	}
	before, _ := mem.Read(0, mem.Size())
	before = bytes.Clone(before)
	if err := inst.initialize(ctx); err != nil {
		return nil, err
	}
	after, _ := mem.Read(0, mem.Size())

	s := &snapshot{size: uint32(len(after))}
	for off := 0; off < len(after); off += snapshotPage {
		page := after[off:min(off+snapshotPage, len(after))]
		var old []byte
		if off < len(before) {
			old = before[off:min(off+snapshotPage, len(before))]
		}
		if bytes.Equal(page, old) || (old == nil && isZero(page)) {
			continue
		}
		if n := len(s.pages); n > 0 && int(s.pages[n-1].offset)+len(s.pages[n-1].data) == off {
			s.pages[n-1].data = append(s.pages[n-1].data, page...)
		} else {
			s.pages = append(s.pages, dirty{offset: uint32(off), data: bytes.Clone(page)})
		}
	}
	for _, name := range globals {
		g, ok := inst.mod.ExportedGlobal(name).(api.MutableGlobal)
		if ok {
			s.globals = append(s.globals, global{name: name, value: g.Get()})
		}
	}
	return s, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// restore brings a freshly instantiated instance to the snapshot's state. It fails when the
// memory cannot grow to the snapshot's size (the instance's memory limit).
func (s *snapshot) restore(inst *instance) error {
	mem := inst.mod.Memory()
	if size := mem.Size(); size < s.size {
		if _, ok := mem.Grow((s.size - size) / wasmPage); !ok {
			return memoryLimit(inst.mem.limit)
		}
	}
	for _, p := range s.pages {
		if !mem.Write(p.offset, p.data) {
			return errors.New("host: restoring the JS runtime's memory failed")
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
