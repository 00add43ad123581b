package wasmbin

import (
	"cmp"
	"slices"
	"strconv"
)

// Edit replaces the body of m.Sections[Index], or drops the section.
type Edit struct {
	Index int
	Body  []byte
	Drop  bool
}

// Rewrite returns the module with edits applied (at most one per section), in one allocation.
// Sections without an edit are copied as they are.
func (m *Module) Rewrite(edits ...Edit) []byte {
	size := len(m.Bin)
	for _, e := range edits {
		s := m.Sections[e.Index]
		size -= s.End() - s.Start
		if !e.Drop {
			size += 1 + ULEBSize(uint64(len(e.Body))) + len(e.Body)
		}
	}
	out := make([]byte, 0, size)
	prev := 0
	for i, s := range m.Sections {
		j := slices.IndexFunc(edits, func(e Edit) bool { return e.Index == i })
		if j < 0 {
			continue
		}
		out = append(out, m.Bin[prev:s.Start]...)
		if !edits[j].Drop {
			out = append(out, s.ID)
			out = AppendULEB(out, uint64(len(edits[j].Body)))
			out = append(out, edits[j].Body...)
		}
		prev = s.End()
	}
	return append(out, m.Bin[prev:]...)
}

// BoundTables returns the module with every table that has no maximum given its minimum as
// maximum, or m.Bin itself when there is none. Tables in a table section it cannot read are left.
func (m *Module) BoundTables() []byte {
	var edits []Edit
	for i, s := range m.Sections {
		if s.ID != SectionTable {
			continue
		}
		var body []byte
		prev := s.BodyAt
		_ = s.Tables(func(_ uint64, l Limits) error {
			if l.HasMax {
				return nil
			}
			body = append(body, m.Bin[prev:l.At]...)
			body = append(body, 1)
			body = AppendULEB(body, l.Min)
			body = AppendULEB(body, l.Min)
			prev = l.End
			return nil
		})
		if body != nil {
			edits = append(edits, Edit{Index: i, Body: append(body, m.Bin[prev:s.End()]...)})
		}
	}
	if edits == nil {
		return m.Bin
	}
	return m.Rewrite(edits...)
}

// ExportGlobals returns an export section body: exports's own exports followed by one export of
// each global defined in the module, named prefix + its index. imported is how many globals the
// module imports (they come first in the index space), defined how many it defines.
func ExportGlobals(exports Section, prefix string, imported, defined uint64) (body []byte, names []string, err error) {
	r := exports.Reader()
	count := r.ULEB()
	if r.err != nil {
		return nil, nil, r.err
	}
	body = AppendULEB(make([]byte, 0, len(exports.Body)+int(defined)*(len(prefix)+8)), count+defined)
	body = append(body, exports.Body[r.at:]...)
	names = make([]string, 0, defined)
	for i := range defined {
		name := prefix + strconv.FormatUint(imported+i, 10)
		names = append(names, name)
		body = AppendULEB(body, uint64(len(name)))
		body = append(body, name...)
		body = append(body, KindGlobal)
		body = AppendULEB(body, imported+i)
	}
	return body, names, nil
}

// MaxDataGap is the longest run of zeros CoalesceData writes between two merged segments. A gap
// shorter than a page cannot cover a whole page, so merging never touches a page that was left
// untouched.
const MaxDataGap = 4096

// CoalesceData returns the module with neighbouring active data segments merged, writing the
// zeros between them, or m.Bin itself when it has nothing to merge or uses data segments in any
// way other than this: every segment active, in memory 0, at an i32.const offset, no two
// overlapping, and no data count section (which bulk-memory instructions that name segments
// require). Memory after instantiation is the same byte for byte.
func (m *Module) CoalesceData() []byte {
	if m.Index(SectionDataCount) >= 0 {
		return m.Bin
	}
	at := m.Index(SectionData)
	if at < 0 {
		return m.Bin
	}
	segments, ok := m.Sections[at].ActiveData()
	if !ok {
		return m.Bin
	}
	// Go's linker writes segments in section order, not address order; with no overlap, the
	// order they are applied in does not matter.
	slices.SortStableFunc(segments, func(a, b DataSegment) int { return cmp.Compare(a.Offset, b.Offset) })
	var end uint64
	for _, s := range segments {
		if uint64(s.Offset) < end {
			return m.Bin
		}
		end = uint64(s.Offset) + uint64(len(s.Init))
	}
	groups := groupSegments(segments)
	if len(groups) == len(segments) {
		return m.Bin
	}
	size := ULEBSize(uint64(len(groups)))
	for _, g := range groups {
		n := g.end - uint64(g.start)
		size += 2 + SLEBSize(int64(int32(g.start))) + 1 + ULEBSize(n) + int(n)
	}
	body := AppendULEB(make([]byte, 0, size), uint64(len(groups)))
	for _, g := range groups {
		n := g.end - uint64(g.start)
		body = append(body, 0x00, 0x41) // active, memory 0; i32.const
		body = AppendSLEB(body, int64(int32(g.start)))
		body = append(body, 0x0b) // end
		body = AppendULEB(body, n)
		from := len(body)
		body = body[:from+int(n)] // zeroed: the gaps
		for _, s := range g.segments {
			copy(body[from+int(s.Offset-g.start):], s.Init)
		}
	}
	return m.Rewrite(Edit{Index: at, Body: body})
}

// segmentGroup is a run of segments that become one: [start, end) in memory.
type segmentGroup struct {
	start    uint32
	end      uint64
	segments []DataSegment
}

// groupSegments groups sorted segments separated by fewer than MaxDataGap bytes.
func groupSegments(segments []DataSegment) []segmentGroup {
	var out []segmentGroup
	for i := 0; i < len(segments); {
		j, end := i+1, uint64(segments[i].Offset)+uint64(len(segments[i].Init))
		for j < len(segments) && uint64(segments[j].Offset)-end < MaxDataGap {
			end = uint64(segments[j].Offset) + uint64(len(segments[j].Init))
			j++
		}
		out = append(out, segmentGroup{start: segments[i].Offset, end: end, segments: segments[i:j]})
		i = j
	}
	return out
}
