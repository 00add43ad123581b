package host

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// memory backs every linear memory of one instance under one budget: the JS engine's one memory,
// a plugin's and its Extism kernel's together, an engine with more memories next. wazero's own
// limit (RuntimeConfig.WithMemoryLimitPages) belongs to the runtime and is baked into compiled
// code; this one is per instance, and can be lowered when a pooled instance is bound to a
// profile. It also remembers a refused growth, which is how an out-of-memory trap is told apart
// from any other.
//
// Where the platform allows, each linear memory is a private anonymous mapping reserved up to the
// limit: growing it never copies, untouched pages cost no RSS, and it is not on the Go heap, whose
// collector would otherwise let garbage from growth copies live until the next cycle.
type memory struct {
	mu      sync.Mutex // a plugin's kernel and the plugin grow from one goroutine, but wazero does not promise it
	limit   uint64     // bytes, over all linear memories together
	used    uint64
	refused uint64 // the size of the last growth refused, 0 if none
	image   *image // mapped copy-on-write at the start of the first memory, if it fits
	imaged  bool   // it was
	linears []*linear
}

// linear is one linear memory, growing within its memory's budget.
type linear struct {
	m       *memory
	buf     []byte
	mapped  []byte // the whole reservation, or nil when the memory is on the Go heap
	started bool   // the initial allocation is done
}

// Allocate implements experimental.MemoryAllocator.
func (m *memory) Allocate(capacity, max uint64) experimental.LinearMemory {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := &linear{m: m}
	if r, err := reserve(min(max, m.limit)); err == nil {
		l.mapped, l.buf = r, r[:0]
		m.imaged = len(m.linears) == 0 && m.image != nil && m.image.mapInto(r)
	} else {
		l.buf = make([]byte, 0, min(capacity, m.limit))
	}
	m.linears = append(m.linears, l)
	return l
}

// Reallocate implements experimental.LinearMemory: it grows the memory to size bytes, or returns
// nil (memory.grow fails in the guest) when the instance's memories would go over the limit.
func (l *linear) Reallocate(size uint64) []byte {
	m := l.m
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := uint64(len(l.buf))
	if m.used-cur+size > m.limit || (l.mapped != nil && size > uint64(len(l.mapped))) {
		m.refused = size
		if l.started {
			return nil
		}
		// wazero cannot fail the initial allocation. The host refuses such a module before it is
		// instantiated; should one get here anyway, the caller sees refused and closes it.
		l.started = true
		l.buf = make([]byte, size)
		return l.buf
	}
	l.started = true
	m.used += size - cur
	switch {
	case l.mapped != nil:
		l.buf = l.mapped[:size]
	case size <= uint64(cap(l.buf)):
		l.buf = l.buf[:size]
	default:
		l.buf = append(l.buf, make([]byte, size-cur)...)
	}
	return l.buf
}

// Free implements experimental.LinearMemory. wazero calls it when the module closes, which can
// happen while the guest is still running (a close from host_call, or Runtime.Close), so it
// unmaps nothing: release does, once the guest has returned.
func (*linear) Free() {}

// release returns the memories to the system. The guest must not run again.
func (m *memory) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.linears {
		if l.mapped != nil {
			unreserve(l.mapped)
		}
		l.mapped, l.buf = nil, nil
	}
	m.linears = nil
}
