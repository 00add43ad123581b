package host

import (
	"bytes"
	"context"
	"errors"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/plimsoll/plimsoll/internal/wasmbin"
	"github.com/plimsoll/plimsoll/profiles"
)

// The JavaScript engine's _initialize (QuickJS-ng's runtime and context, engine.js and the
// generic preamble, a trivial tool run once) costs guest CPU on every start, and its result is the same for every instance: it
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

// snapshot is the state of an instance after _initialize, or, for a .wasm tool (prepareData),
// before it: the memory its data segments make.
type snapshot struct {
	size       uint64   // the memory size in bytes
	image      []byte   // the memory, when it is not in file
	file       *image   // the memory, to map copy-on-write; nil when the platform cannot
	globals    []global // the mutable globals
	beforeInit bool     // the state is before _initialize, which each instance then runs
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
func prepareJS(bin []byte) (mod []byte, data []wasmbin.DataSegment, globals []string, ok bool) {
	m, err := wasmbin.Read(bin)
	if err != nil || m.Index(wasmbin.SectionDataCount) >= 0 || m.Index(wasmbin.SectionStart) >= 0 { // a data count: bulk-memory instructions may name segments
		return nil, nil, nil, false
	}
	export, dataSec, global := m.Index(wasmbin.SectionExport), m.Index(wasmbin.SectionData), m.Index(wasmbin.SectionGlobal)
	if export < 0 || dataSec < 0 || global < 0 {
		return nil, nil, nil, false
	}
	imported, ok := importedGlobals(m)
	defined, err := m.Sections[global].Count()
	if !ok || err != nil || defined == 0 || defined > 1<<16 {
		return nil, nil, nil, false
	}
	if data, ok = m.Sections[dataSec].ActiveData(); !ok {
		return nil, nil, nil, false
	}
	body, globals, err := wasmbin.ExportGlobals(m.Sections[export], globalExportPrefix, imported, defined)
	if err != nil {
		return nil, nil, nil, false
	}
	return m.Rewrite(wasmbin.Edit{Index: export, Body: body}, wasmbin.Edit{Index: dataSec, Drop: true}), data, globals, true
}

// prepareData returns bin without its data section and the memory image its active segments
// make, for a .wasm tool. wazero evaluates every segment's offset and copies its bytes in each
// instantiation, and Go's linker leaves runs of zeros out of the data section, so a Go tool has
// thousands of segments: about half of its second run's start. The image is mapped copy-on-write
// instead, as the JS engine's snapshot is. Unlike that snapshot it is the state before
// _initialize, which every instance still runs: Go's runtime seeds its randomness there
// (math/rand, map hash seeds), and a snapshot after it would give every run the same seed (see
// SECURITY.md). ok is false when bin cannot be read this way (no data section or memory of its
// own, a data count section, a start function, which runs inside instantiation where a copied
// image is not in yet, a segment that is not active in memory 0 at an i32.const offset or
// that ends past the memory's minimum size): bin is then compiled as it is.
func prepareData(bin []byte) (mod []byte, snap *snapshot, ok bool) {
	m, err := wasmbin.Read(bin)
	if err != nil || m.Index(wasmbin.SectionDataCount) >= 0 || m.Index(wasmbin.SectionStart) >= 0 { // a data count: bulk-memory instructions may name segments
		return nil, nil, false
	}
	dataSec := m.Index(wasmbin.SectionData)
	pages, hasMemory := m.MinPages()
	if dataSec < 0 || !hasMemory {
		return nil, nil, false
	}
	data, ok := m.Sections[dataSec].ActiveData()
	if !ok {
		return nil, nil, false
	}
	var end uint64
	for _, d := range data {
		end = max(end, uint64(d.Offset)+uint64(len(d.Init)))
	}
	if end > pages*wasmPage { // instantiating fails; wazero says so
		return nil, nil, false
	}
	mem := make([]byte, end)
	for _, d := range data {
		copy(mem[d.Offset:], d.Init)
	}
	snap = &snapshot{size: end, beforeInit: true}
	if snap.file, err = newImage(mem); err != nil {
		snap.image = mem
	}
	return m.Rewrite(wasmbin.Edit{Index: dataSec, Drop: true}), snap, true
}

// importedGlobals counts the globals m imports, which come first in the index space.
func importedGlobals(m *wasmbin.Module) (uint64, bool) {
	s, found := m.Section(wasmbin.SectionImport)
	if !found {
		return 0, true
	}
	counts, err := s.ImportCounts()
	return counts[wasmbin.KindGlobal], err == nil
}

// takeSnapshot instantiates compiled (a module prepareJS made), writes the data segments into its
// memory in order, as instantiation would, runs _initialize and keeps the result. globals names
// the exports prepareJS added.
func takeSnapshot(ctx context.Context, r wazero.Runtime, compiled wazero.CompiledModule, data []wasmbin.DataSegment, globals []string, configure ...func(wazero.ModuleConfig) wazero.ModuleConfig) (*snapshot, error) {
	inst, err := instantiate(ctx, r, compiled, profiles.MaxMemory, nil, configure...)
	if err != nil {
		return nil, err
	}
	defer inst.close(context.Background())
	mem := inst.mod.Memory()
	if mem == nil {
		return nil, errors.New("the module has no memory")
	}
	for _, d := range data {
		if !mem.Write(d.Offset, d.Init) {
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
	inst.initialized = !s.beforeInit
	return nil
}
