//go:build !linux

package host

import "errors"

// reserve is not available here: guest memory lives on the Go heap.
func reserve(uint64) ([]byte, error) {
	return nil, errors.New("no memory reservation on this platform")
}

func unreserve([]byte) {}
