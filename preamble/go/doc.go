// Package plimsoll is the Go guest preamble: the client library a Go tool built with
// GOOS=wasip1 GOARCH=wasm imports to call its API through the plimsoll host (guest ABI v2,
// preamble/ABI.md). Its import path ends in /go, so name it when importing:
//
//	import plimsoll "github.com/plimsoll/plimsoll/preamble/go"
//
//	resp, err := plimsoll.Get("/items", plimsoll.WithQuery("tag", "red", "blue"))
//	var refused *plimsoll.OutcomeError
//	switch {
//	case errors.Is(err, plimsoll.ErrShed) && errors.As(err, &refused):
//		time.Sleep(refused.RetryAfter) // the API is overloaded: the broker answered for it
//	case err != nil:
//		return err // denied, over budget, invalid, failed, or no host
//	case !resp.OK():
//		return fmt.Errorf("listing items: %d %s", resp.Status, resp.Text())
//	}
//
// # What comes back
//
// A call the broker forwarded returns the upstream's answer as a *Response and a nil error, whatever
// its status: a 404 or even an upstream 503 is a response, not an error (check Response.OK). A
// call the broker answered itself (its Plimsoll-Outcome header names the outcome) returns a nil
// *Response and an *OutcomeError, which matches one of ErrShed, ErrDenied, ErrOverBudget,
// ErrInvalid or ErrFailed with errors.Is, carries Retry-After as a duration, and keeps the broker's
// answer in its Response field. Anything else (no host, a broken ABI exchange, a body that cannot
// be encoded as JSON) is a plain error.
//
// # What is sent
//
// The preamble validates nothing the broker validates: a non-canonical path, a forbidden header or
// an unknown method travels as given and comes back as ErrInvalid, so every language's preamble
// behaves the same way. The one convenience: a '?' in a path splits off a query, sent first. Query values are percent-encoded with RFC 3986's unreserved characters
// left as they are (a space is %20), names in sorted order; RawQuery is sent verbatim, before them.
// A []byte body is sent as its exact bytes, a string as text, a json.RawMessage or any other value
// as JSON with Content-Type: application/json unless a Content-Type is set.
//
// # Responses of any size
//
// A response envelope up to FirstBufferSize bytes arrives in one host_call; a larger one is
// fetched in a second step with host_response into a buffer of its exact size. Calls from several
// goroutines are serialised.
//
// Outside a plimsoll guest (any GOOS but wasip1) the package builds, and every call fails with
// ErrNoHost, so a tool's pure logic can be unit-tested natively.
package plimsoll
