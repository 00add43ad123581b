//go:build !wasip1 || plimsoll_extism

package plimsoll

// roundTrip is the transport Do uses. Outside a plimsoll guest there is no host; tests replace it,
// and so does an Extism plugin (preamble/extism-go, built with -tags plimsoll_extism) through
// UseTransport.
var roundTrip = func([]byte) ([]byte, error) { return nil, ErrNoHost }
