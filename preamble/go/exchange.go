package plimsoll

import (
	"sync"

	"github.com/plimsoll/plimsoll/abi"
)

// FirstBufferSize is the size of the buffer each response envelope is first offered to. A larger
// envelope is fetched in a second step (host_response) into a buffer of its exact size.
const FirstBufferSize = 64 << 10

// imports is the pair of plimsoll imports, over Go slices.
type imports interface {
	// hostCall sends req and offers resp for the answer; it returns the envelope's length or a
	// negative code.
	hostCall(req, resp []byte) int32
	// hostResponse copies the pending envelope into buf; it returns its length or a negative code.
	hostResponse(buf []byte) int32
}

// conn makes exchanges one at a time: the first buffer and the host's pending response are
// shared by every goroutine of the guest.
type conn struct {
	mu      sync.Mutex
	imports imports
	first   []byte
}

// exchange sends one request envelope and returns the response envelope, in its own slice.
func (c *conn) exchange(req []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first == nil {
		c.first = make([]byte, FirstBufferSize)
	}
	n := c.imports.hostCall(req, c.first)
	switch {
	case n < 0:
		return nil, &HostError{Func: abi.HostCall, Code: n}
	case int(n) <= len(c.first):
		return append([]byte(nil), c.first[:n]...), nil
	}
	big := make([]byte, n)
	if m := c.imports.hostResponse(big); m != n {
		return nil, &HostError{Func: abi.HostResponse, Code: m}
	}
	return big, nil
}
