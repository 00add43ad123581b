package plimsoll

import (
	"errors"
	"fmt"
	"sync"

	"github.com/plimsoll/plimsoll/abi"
)

// Call is a request made with Go: it is in flight at the host (or waiting in the guest for room
// under limits.max_inflight) until Wait returns its answer.
type Call struct {
	req  Request
	env  []byte
	id   int32
	raw  []byte // the response envelope, once complete
	err  error
	done bool
}

// Go starts req without waiting for it (guest ABI v2): calls made with Go overlap at the host, up
// to the profile's limits.max_inflight; more wait in the guest for room. Wait gives the answer.
func Go(req Request) *Call {
	c := &Call{req: req, env: encodeRequest(&req)}
	calls.start(c)
	return c
}

// Wait waits for the call and returns what Do would have returned for it.
func (c *Call) Wait() (*Response, error) {
	calls.await(c)
	if c.err != nil {
		return nil, fmt.Errorf("%s %s: %w", c.req.Method, c.req.Path, c.err)
	}
	resp, err := decodeResponse(c.raw)
	if err != nil {
		return nil, fmt.Errorf("plimsoll: %s %s: %w", c.req.Method, c.req.Path, err)
	}
	if oe := outcomeOf(&c.req, resp); oe != nil {
		return nil, oe
	}
	return resp, nil
}

// WaitAll waits for every call and returns their errors joined (nil when every call was
// forwarded); each call's Wait then answers at once.
func WaitAll(cs ...*Call) error {
	var errs []error
	for _, c := range cs {
		if _, err := c.Wait(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// asyncImports are the ABI v2 imports over Go slices.
type asyncImports interface {
	submit(req []byte) int32
	wait(ids []uint32, timeoutMs uint32) int32
	result(id int32, buf []byte) int32
}

// dispatcher submits calls, queues those over the host's in-flight limit, and hands each
// completed response to its Call. One goroutine pumps the host at a time.
type dispatcher struct {
	mu       sync.Mutex
	imports  asyncImports
	inflight map[int32]*Call
	queued   []*Call
	buf      []byte
	ids      [64]uint32
}

func (d *dispatcher) start(c *Call) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.queued) > 0 || !d.submit(c) {
		d.queued = append(d.queued, c)
	}
}

// submit reports false when the host has no room; the call then waits in the guest.
func (d *dispatcher) submit(c *Call) bool {
	id := d.imports.submit(c.env)
	switch {
	case id == abi.ErrInflight:
		return false
	case id <= 0:
		c.err, c.done = &HostError{Func: abi.HostSubmit, Code: id}, true
	default:
		if d.inflight == nil {
			d.inflight = map[int32]*Call{}
		}
		c.id = id
		d.inflight[id] = c
	}
	return true
}

func (d *dispatcher) await(c *Call) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for !c.done {
		d.pump()
	}
}

// pump waits for at least one completion, collects every completed response, and submits
// queued calls into the room that made.
func (d *dispatcher) pump() {
	if len(d.inflight) == 0 {
		d.flushQueue()
		if len(d.inflight) == 0 {
			d.failAll(errors.New("plimsoll: the host holds no call to wait for"))
			return
		}
	}
	n := d.imports.wait(d.ids[:], abi.WaitForever)
	if n <= 0 {
		d.failAll(&HostError{Func: abi.HostWait, Code: n}) // 0: the run is ending
		return
	}
	for _, id := range d.ids[:n] {
		d.collect(int32(id))
	}
	d.flushQueue()
}

func (d *dispatcher) collect(id int32) {
	c := d.inflight[id]
	if c == nil {
		return
	}
	delete(d.inflight, id)
	if d.buf == nil {
		d.buf = make([]byte, FirstBufferSize)
	}
	n := d.imports.result(id, d.buf)
	if n > int32(len(d.buf)) {
		big := make([]byte, n)
		if m := d.imports.result(id, big); m != n {
			c.err, c.done = &HostError{Func: abi.HostResult, Code: m}, true
			return
		}
		c.raw, c.done = big, true
		return
	}
	if n < 0 {
		c.err, c.done = &HostError{Func: abi.HostResult, Code: n}, true
		return
	}
	c.raw, c.done = append([]byte(nil), d.buf[:n]...), true
}

func (d *dispatcher) flushQueue() {
	for len(d.queued) > 0 && d.submit(d.queued[0]) {
		d.queued = d.queued[1:]
	}
}

func (d *dispatcher) failAll(err error) {
	for id, c := range d.inflight {
		c.err, c.done = err, true
		delete(d.inflight, id)
	}
	for _, c := range d.queued {
		c.err, c.done = err, true
	}
	d.queued = nil
}
