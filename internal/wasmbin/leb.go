package wasmbin

// ULEB decodes an unsigned LEB128 number of at most 64 bits; n is the bytes read, 0 when b does
// not start with one. It is the only LEB128 decoder in plimsoll's non-test code.
func ULEB(b []byte) (v uint64, n int) {
	var shift uint
	for i, c := range b {
		if i == 10 {
			return 0, 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, i + 1
		}
		shift += 7
	}
	return 0, 0
}

// SLEB decodes a signed LEB128 number of at most 64 bits; n is 0 when b does not start with one.
func SLEB(b []byte) (v int64, n int) {
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

// AppendULEB appends v as unsigned LEB128.
func AppendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// AppendSLEB appends v as signed LEB128.
func AppendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// ULEBSize is the length of v as unsigned LEB128.
func ULEBSize(v uint64) int {
	n := 1
	for v >>= 7; v != 0; v >>= 7 {
		n++
	}
	return n
}

// SLEBSize is the length of v as signed LEB128.
func SLEBSize(v int64) int {
	var buf [10]byte
	return len(AppendSLEB(buf[:0], v))
}
