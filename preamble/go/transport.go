package plimsoll

// UseTransport makes Do send each request envelope through rt, which returns the response
// envelope, instead of through the plimsoll imports. It is the seam for guests that reach the
// broker another way: an Extism plugin's preamble (preamble/extism-go) sets it in its init, in a
// build with -tags plimsoll_extism, which leaves the plimsoll imports out. Call it before any
// call is made, from one goroutine.
func UseTransport(rt func(req []byte) ([]byte, error)) { roundTrip = rt }
