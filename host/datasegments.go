package host

import (
	"cmp"
	"slices"
)

// Go's wasm linker leaves runs of zeros out of the data section, so the JavaScript runtime has
// about 100,000 small active data segments. wazero evaluates each segment's offset expression and
// keeps a slice header per segment in every instance: about 6 ms and 2.3 MiB of Go heap per
// instantiation. The JS runtime's module normally has no data section at all (see snapshot.go);
// when it cannot be prepared that way, coalesceData merges neighbouring segments into one before
// the module is compiled, writing the zeros between them explicitly. Memory after instantiation
// is the same byte for byte.

// maxDataGap is the longest run of zeros written between two merged segments. A gap shorter than
// a page cannot cover a whole page, so merging never touches a page that was left untouched.
const maxDataGap = 4096

type dataSegment struct {
	offset uint32
	init   []byte
}

// coalesceData returns bin with adjacent active data segments merged, or bin itself when it has
// nothing to merge or uses data segments in any way other than the one handled here: every
// segment active, in memory 0, at an i32.const offset, no two overlapping, and no data count section
// (which bulk-memory instructions that name segments require).
func coalesceData(bin []byte) []byte {
	if len(bin) < 8 {
		return bin
	}
	var dataStart, dataEnd int // the whole data section, id and size included
	var segments []dataSegment
	rest, pos := bin[8:], 8
	for len(rest) > 0 {
		id := rest[0]
		size, n := uleb128(rest[1:])
		if n == 0 || size > uint64(len(rest)-1-n) {
			return bin
		}
		body := rest[1+n : 1+n+int(size)]
		switch id {
		case 12: // data count
			return bin
		case 11:
			var ok bool
			if segments, ok = parseData(body); !ok {
				return bin
			}
			dataStart, dataEnd = pos, pos+1+n+int(size)
		}
		rest = rest[1+n+int(size):]
		pos += 1 + n + int(size)
	}
	groups := groupSegments(segments)
	if len(groups) == len(segments) {
		return bin
	}

	// One allocation: the section is written straight into the output, whose zeroed bytes are
	// the gaps.
	var head []byte
	head = appendULEB(head, uint64(len(groups)))
	bodySize := len(head)
	for _, g := range groups {
		n := g.end - uint64(g.start)
		bodySize += 2 + slebSize(int64(int32(g.start))) + 1 + ulebSize(n) + int(n)
	}
	out := make([]byte, 0, dataStart+1+ulebSize(uint64(bodySize))+bodySize+len(bin)-dataEnd)
	out = append(out, bin[:dataStart]...)
	out = append(out, 11)
	out = appendULEB(out, uint64(bodySize))
	out = append(out, head...)
	for _, g := range groups {
		n := g.end - uint64(g.start)
		out = append(out, 0x00, 0x41) // active, memory 0; i32.const
		out = appendSLEB(out, int64(int32(g.start)))
		out = append(out, 0x0b) // end
		out = appendULEB(out, n)
		at := len(out)
		out = out[:at+int(n)]
		for _, s := range g.segments {
			copy(out[at+int(s.offset-g.start):], s.init)
		}
	}
	return append(out, bin[dataEnd:]...)
}

// parseData reads a data section body made only of active segments in memory 0 with i32.const
// offsets that do not overlap, and returns them sorted by offset. Go's linker writes them in
// section order, not address order; with no overlap, the order they are applied in does not
// matter.
func parseData(body []byte) ([]dataSegment, bool) {
	segments, ok := dataSegments(body)
	if !ok {
		return nil, false
	}
	slices.SortStableFunc(segments, func(a, b dataSegment) int { return cmp.Compare(a.offset, b.offset) })
	var end uint64
	for _, s := range segments {
		if uint64(s.offset) < end {
			return nil, false
		}
		end = uint64(s.offset) + uint64(len(s.init))
	}
	return segments, true
}

// segmentGroup is a run of segments that become one: [start, end) in memory.
type segmentGroup struct {
	start    uint32
	end      uint64
	segments []dataSegment
}

// groupSegments groups sorted segments separated by fewer than maxDataGap bytes.
func groupSegments(segments []dataSegment) []segmentGroup {
	var out []segmentGroup
	for i := 0; i < len(segments); {
		j, end := i+1, uint64(segments[i].offset)+uint64(len(segments[i].init))
		for j < len(segments) && uint64(segments[j].offset)-end < maxDataGap {
			end = uint64(segments[j].offset) + uint64(len(segments[j].init))
			j++
		}
		out = append(out, segmentGroup{start: segments[i].offset, end: end, segments: segments[i:j]})
		i = j
	}
	return out
}

// sleb128 decodes a signed LEB128 number of at most 64 bits; n is 0 when it is malformed.
func sleb128(b []byte) (v int64, n int) {
	var shift uint
	for i, c := range b {
		if i == 10 {
			return 0, 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, i + 1
		}
	}
	return 0, 0
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func ulebSize(v uint64) int { return len(appendULEB(nil, v)) }

func slebSize(v int64) int { return len(appendSLEB(nil, v)) }
