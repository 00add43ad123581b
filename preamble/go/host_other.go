//go:build !wasip1

package plimsoll

// roundTrip is the transport Do uses. Outside a plimsoll guest there is no host; tests replace it.
var roundTrip = func([]byte) ([]byte, error) { return nil, ErrNoHost }
