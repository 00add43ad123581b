package host

import (
	"context"
	"sync"
)

// The in-memory cache of compiled tools: compiled code takes about 10–20× the module's size.
const (
	maxCachedModules     = 64
	maxCachedModuleBytes = 64 << 20 // of module bytes
)

// moduleCache keeps compiled modules by content hash, least recently used first out, bounded in
// count and in module bytes. A module in use by a run is closed only when its last run is done.
type moduleCache struct {
	mu         sync.Mutex
	entries    map[[32]byte]*cachedModule
	order      [][32]byte // least recently used first
	bytes      int
	maxEntries int
	maxBytes   int
	closeGuest func(*guest) // how an entry is released; nil for guest.close
}

type cachedModule struct {
	ready   chan struct{} // closed when the compilation has ended
	g       *guest
	err     error
	size    int
	refs    int // runs using g
	evicted bool
}

func newModuleCache(maxEntries, maxBytes int) *moduleCache {
	return &moduleCache{entries: map[[32]byte]*cachedModule{}, maxEntries: maxEntries, maxBytes: maxBytes}
}

// get returns the guest for key, compiling it once however many runs ask at the same time. It
// waits for the compilation until ctx is done. The guest's release gives the run's hold back.
func (c *moduleCache) get(ctx context.Context, key [32]byte, size int, compile func() (*guest, error)) (*guest, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		e = &cachedModule{ready: make(chan struct{}), size: size}
		c.entries[key] = e
		go c.fill(key, e, compile)
	}
	e.refs++ // held while waiting, so an eviction meanwhile cannot close it under us
	c.mu.Unlock()

	select {
	case <-e.ready:
	case <-ctx.Done():
		c.done(e)
		return nil, ctx.Err()
	}
	if e.err != nil {
		c.done(e)
		return nil, e.err
	}
	c.mu.Lock()
	c.touch(key)
	c.mu.Unlock()
	g := *e.g
	g.release = func() { c.done(e) }
	return &g, nil
}

// lookup returns the guest for key if it is compiled already, held as get's is, or nil.
func (c *moduleCache) lookup(key [32]byte) *guest {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.g == nil { // not compiled yet, or failed (and being removed)
		return nil
	}
	e.refs++
	c.touch(key)
	g := *e.g
	g.release = func() { c.done(e) }
	return &g
}

// fill compiles an entry; a failure is not kept, so the next run tries again.
func (c *moduleCache) fill(key [32]byte, e *cachedModule, compile func() (*guest, error)) {
	g, err := compile()
	c.mu.Lock()
	defer c.mu.Unlock()
	e.g, e.err = g, err
	close(e.ready)
	if err != nil {
		delete(c.entries, key)
		return
	}
	c.order = append(c.order, key)
	c.bytes += e.size
	for len(c.order) > 1 && (len(c.order) > c.maxEntries || c.bytes > c.maxBytes) {
		c.evictLocked(c.order[0])
	}
}

func (c *moduleCache) touch(key [32]byte) {
	for i, k := range c.order {
		if k == key {
			c.order = append(append(c.order[:i:i], c.order[i+1:]...), key)
			return
		}
	}
}

func (c *moduleCache) evictLocked(key [32]byte) {
	e := c.entries[key]
	delete(c.entries, key)
	for i, k := range c.order {
		if k == key {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.bytes -= e.size
	e.evicted = true
	if e.refs == 0 {
		c.release(e.g)
	}
}

func (c *moduleCache) release(g *guest) {
	if c.closeGuest != nil {
		c.closeGuest(g)
		return
	}
	g.close()
}

// done gives back one run's hold on e, closing it if it was evicted and this was the last.
func (c *moduleCache) done(e *cachedModule) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.refs--
	if e.refs == 0 && e.evicted && e.g != nil {
		c.release(e.g)
	}
}

// closeAll evicts everything; modules still in use close when their runs are done.
func (c *moduleCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.order) > 0 {
		c.evictLocked(c.order[0])
	}
}

// close releases a cached guest's compiled code and its memory image, if it has one. Instances
// that map the image keep their mapping.
func (g *guest) close() {
	g.mod.Close(context.Background())
	g.snap.close()
}
