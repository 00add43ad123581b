package wasmbin

// Reader reads the binary format's primitives from one section's body; the first error sticks
// and every later read returns zero.
type Reader struct {
	b    []byte
	at   int
	base int // the offset of b[0] in the module
	err  error
}

// Reader reads s's body.
func (s Section) Reader() *Reader { return &Reader{b: s.Body, base: s.BodyAt} }

// Err is the first error, an *Error matching ErrTruncated.
func (r *Reader) Err() error { return r.err }

// Done reports whether the body is read (or reading failed).
func (r *Reader) Done() bool { return r.err != nil || r.at >= len(r.b) }

// Offset is the reader's position in the module.
func (r *Reader) Offset() int { return r.base + r.at }

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.err != nil || r.at >= len(r.b) {
		r.fail()
		return 0
	}
	c := r.b[r.at]
	r.at++
	return c
}

// ULEB reads an unsigned LEB128 number.
func (r *Reader) ULEB() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := ULEB(r.b[r.at:])
	if n == 0 {
		r.fail()
		return 0
	}
	r.at += n
	return v
}

// SLEB reads a signed LEB128 number.
func (r *Reader) SLEB() int64 {
	if r.err != nil {
		return 0
	}
	v, n := SLEB(r.b[r.at:])
	if n == 0 {
		r.fail()
		return 0
	}
	r.at += n
	return v
}

// Bytes reads a length-prefixed vector of bytes (a name, value types), as a slice of the module.
func (r *Reader) Bytes() []byte {
	n := r.ULEB()
	if r.err == nil && n > uint64(len(r.b)-r.at) {
		r.fail()
	}
	if r.err != nil {
		return nil
	}
	r.at += int(n)
	return r.b[r.at-int(n) : r.at]
}

// Skip moves past n bytes.
func (r *Reader) Skip(n uint64) {
	if r.err == nil && n > uint64(len(r.b)-r.at) {
		r.fail()
	}
	if r.err == nil {
		r.at += int(n)
	}
}

// Limits are a table's or a memory's limits.
type Limits struct {
	Flags    byte
	Min, Max uint64
	HasMax   bool
	At, End  int // their offsets in the module, flags byte included
}

// Limits reads limits.
func (r *Reader) Limits() Limits {
	l := Limits{At: r.Offset(), Flags: r.Byte()}
	l.Min = r.ULEB()
	if l.Flags&1 == 1 {
		l.Max, l.HasMax = r.ULEB(), true
	}
	l.End = r.Offset()
	return l
}

func (r *Reader) fail() {
	if r.err == nil {
		r.err = &Error{Offset: r.Offset(), Err: ErrTruncated}
	}
}
